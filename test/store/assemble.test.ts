/**
 * Assembling a stored machine's NodeBootstrap (src/store/assemble.ts): the fields each
 * part contributes, machine values merged into the kubeadm overrides, validation
 * problems naming the revisions, and pinned revisions rendering the same bytes after
 * every part changed.
 */
import { RULES_VERSION } from '../../src/rules.js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { renderNodeBootstrap } from '../../src/render.js';
import { validateNodeBootstrap } from '../../src/request/parse.js';
import { AssemblyError, assembleNodeBootstrap, type AssemblyParts, machineNodeBootstrap } from '../../src/store/assemble.js';
import type { ClusterSpec, MachineSpec, ProfileSpec, StoredResource } from '../../src/store/resources.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { example, HASH, TOKEN } from '../support/requests.js';

const AT = '2030-01-01T00:00:00.000Z';
const stored = <S>(kind: StoredResource['kind'], name: string, spec: S, revision = 1): StoredResource<S> => ({ kind, name, labels: {}, revision, spec, rules: RULES_VERSION, createdAt: AT, updatedAt: AT });

const clusterSpec: ClusterSpec = { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] };
const workerProfile: ProfileSpec = { role: 'worker', kubernetesVersion: 'v1.33.2', provisioning: { preKubeadmCommands: ['swapoff -a'] }, output: { format: 'ignition' } };
const machineSpec = (extra: Partial<MachineSpec> = {}): MachineSpec => ({ selectors: { mac: ['aa:bb:cc:dd:ee:01'], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [], ...extra });

const parts = (machine: Partial<MachineSpec> = {}, profile: ProfileSpec = workerProfile, cluster: ClusterSpec = clusterSpec): AssemblyParts => ({
  machine: { ...stored('Machine', 'node-1', machineSpec(machine), 4), refs: { clusterRevision: 2, profileRevision: 3 } },
  cluster: stored('Cluster', 'prod', cluster, 2),
  profile: stored('Profile', 'worker', profile, 3),
});

describe('assembleNodeBootstrap', () => {
  it('takes role, version, kubeadm, provisioning and output from the profile, the cluster section from the cluster', () => {
    assert.deepEqual(assembleNodeBootstrap(parts()), {
      apiVersion: 'bootwright.dev/v1alpha1',
      kind: 'NodeBootstrap',
      metadata: { name: 'node-1' },
      spec: { role: 'worker', kubernetesVersion: 'v1.33.2', cluster: clusterSpec, provisioning: { preKubeadmCommands: ['swapoff -a'] }, output: { format: 'ignition' } },
    });
  });

  it('names the node nodeName when given', () => {
    assert.deepEqual(assembleNodeBootstrap(parts({ nodeName: 'worker-7' })).metadata, { name: 'worker-7' });
  });

  it('merges taints and node labels into the join configuration, keeping the profile overrides', () => {
    const profile: ProfileSpec = {
      ...workerProfile,
      kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'max-pods': '110', 'node-labels': 'tier=back,zone=a' }, ignorePreflightErrors: ['Swap'] } } },
    };
    const doc = assembleNodeBootstrap(parts({ nodeLabels: { zone: 'b', rack: 'r1' }, taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] }, profile));
    assert.deepEqual((doc.spec as { kubeadm: unknown }).kubeadm, {
      joinConfiguration: {
        nodeRegistration: {
          kubeletExtraArgs: { 'max-pods': '110', 'node-labels': 'tier=back,zone=b,rack=r1' },
          ignorePreflightErrors: ['Swap'],
          taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
        },
      },
    });
    assert.deepEqual(profile.kubeadm?.joinConfiguration, { nodeRegistration: { kubeletExtraArgs: { 'max-pods': '110', 'node-labels': 'tier=back,zone=a' }, ignorePreflightErrors: ['Swap'] } }, 'the profile is not changed');
  });

  it('keeps the list form of kubeletExtraArgs', () => {
    const profile: ProfileSpec = { ...workerProfile, kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: [{ name: 'v', value: '2' }, { name: 'node-labels', value: 'a=1' }, { name: 'x', value: 'y' }] } } } };
    const doc = assembleNodeBootstrap(parts({ nodeLabels: { b: '2' } }, profile));
    assert.deepEqual((doc.spec as { kubeadm: { joinConfiguration: { nodeRegistration: unknown } } }).kubeadm.joinConfiguration.nodeRegistration, {
      kubeletExtraArgs: [{ name: 'v', value: '2' }, { name: 'node-labels', value: 'a=1,b=2' }, { name: 'x', value: 'y' }],
    });
  });

  it('puts advertiseAddress where init and control-plane joins read it, and refuses it for workers', () => {
    const init = assembleNodeBootstrap(parts({ advertiseAddress: '10.0.0.10' }, { role: 'init', kubernetesVersion: 'v1.33.2' }));
    assert.deepEqual((init.spec as { kubeadm: unknown }).kubeadm, { initConfiguration: { localAPIEndpoint: { advertiseAddress: '10.0.0.10' } } });
    const cp = assembleNodeBootstrap(parts({ advertiseAddress: '10.0.0.11' }, { role: 'control-plane', kubernetesVersion: 'v1.33.2', kubeadm: { joinConfiguration: { controlPlane: { localAPIEndpoint: { bindPort: 6443 } } } } }));
    assert.deepEqual((cp.spec as { kubeadm: unknown }).kubeadm, { joinConfiguration: { controlPlane: { localAPIEndpoint: { bindPort: 6443, advertiseAddress: '10.0.0.11' } } } });
    assert.throws(() => assembleNodeBootstrap(parts({ advertiseAddress: '10.0.0.12' })), (e) => e instanceof AssemblyError && e.problems[0]!.path === 'spec.advertiseAddress');
  });
});

describe('machineNodeBootstrap', () => {
  it('renders exactly what POST /v1/render renders for the same document', () => {
    const req = machineNodeBootstrap(parts({ nodeLabels: { rack: 'r1' } }));
    const direct = validateNodeBootstrap(JSON.parse(JSON.stringify(assembleNodeBootstrap(parts({ nodeLabels: { rack: 'r1' } })))));
    const a = renderNodeBootstrap(req, { format: 'cloud-config' });
    assert.equal(a.body, renderNodeBootstrap(direct, { format: 'cloud-config' }).body);
    const config = load(a.body) as { write_files: { path: string; content: string }[] };
    const kubeadm = config.write_files.find((f) => f.path === '/run/kubeadm/kubeadm-join-config.yaml')!.content;
    assert.match(kubeadm, /name: node-labels\n\s+value: rack=r1/);
    assert.match(kubeadm, /name: node-1\n/);
  });

  it('an invalid combination is an AssemblyError naming the NodeBootstrap field and the three revisions', () => {
    const { bootstrapToken: _t, ...noToken } = clusterSpec;
    assert.throws(
      () => machineNodeBootstrap(parts({}, workerProfile, noToken)),
      (e) => {
        assert.ok(e instanceof AssemblyError);
        assert.ok(e.problems.some((p) => p.path === 'spec.cluster.bootstrapToken'), JSON.stringify(e.problems));
        assert.equal(e.detail, 'machine "node-1" revision 4 with cluster "prod" revision 2 and profile "worker" revision 3 do not make a valid NodeBootstrap');
        return true;
      },
    );
  });

  it('a pinned revision renders the same bytes after the machine, cluster and profile all changed', async () => {
    const init = example('init').spec as { cluster: ClusterSpec };
    const store = await openSqliteStore(':memory:');
    try {
      await store.create('Cluster', { name: 'prod', spec: init.cluster });
      await store.create('Profile', { name: 'cp', spec: { role: 'init', kubernetesVersion: 'v1.33.2', provisioning: { files: [{ path: '/etc/motd', content: 'hello: "#1"\n', permissions: '0644' }] } } });
      await store.create('Machine', { name: 'cp-1', spec: machineSpec({ profile: 'cp', advertiseAddress: '10.0.0.10', nodeLabels: { rack: 'r1' } }) });
      const pinned = async () => {
        const machine = await store.getRevision('Machine', 'cp-1', 1);
        const p: AssemblyParts = {
          machine,
          cluster: await store.getRevision('Cluster', 'prod', machine.refs!.clusterRevision),
          profile: await store.getRevision('Profile', 'cp', machine.refs!.profileRevision),
        };
        const req = machineNodeBootstrap(p);
        return [renderNodeBootstrap(req, { format: 'cloud-config' }).body, renderNodeBootstrap(req, { format: 'ignition', ignitionVersion: '3.4.0' }).body];
      };
      const before = await pinned();
      await store.replace('Cluster', { name: 'prod', spec: { ...init.cluster, bootstrapToken: 'zzzzzz.zzzzzzzzzzzzzzzz', controlPlaneEndpoint: 'api2.prod.example.com:6443' } });
      await store.replace('Profile', { name: 'cp', spec: { role: 'init', kubernetesVersion: 'v1.34.1' } });
      await store.replace('Machine', { name: 'cp-1', spec: machineSpec({ profile: 'cp', nodeName: 'renamed', advertiseAddress: '10.0.0.99' }) });
      assert.deepEqual(await pinned(), before);
      assert.match(before[0]!, /wofy6e\.c8kcvmvpmii021pm/);
      assert.match(before[0]!, /advertiseAddress: 10\.0\.0\.10/);
      const latest = await store.get('Machine', 'cp-1');
      const now = machineNodeBootstrap({ machine: latest, cluster: await store.get('Cluster', 'prod'), profile: await store.get('Profile', 'cp') });
      const body = renderNodeBootstrap(now, { format: 'cloud-config' }).body;
      assert.notEqual(body, before[0]);
      assert.match(body, /zzzzzz\.zzzzzzzzzzzzzzzz/);
      assert.match(body, /kubernetesVersion: v1\.34\.1/);
    } finally {
      await store.close();
    }
  });
});
