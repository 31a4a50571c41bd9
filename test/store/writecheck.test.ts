/**
 * src/store/writecheck.ts on its own: the machine field rules, the kubeadm override
 * values, and that a cluster or profile write reads each affected machine once and its
 * other part once per name (linear in the machines affected), on a real SQLite store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RequestError } from '../../src/errors.js';
import type { MachineSpec } from '../../src/store/resources.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { checkWrite, nodeValueProblems, machineFieldProblems } from '../../src/store/writecheck.js';
import { HASH, TOKEN } from '../support/requests.js';

const machine = (extra: Partial<MachineSpec> = {}): MachineSpec => ({ selectors: { mac: [], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [], ...extra });
const KEY = Buffer.alloc(32, 7);

describe('machineFieldProblems', () => {
  it('accepts Kubernetes labels and taints and IP addresses', () => {
    assert.deepEqual(machineFieldProblems(machine({ nodeLabels: { 'example.com/zone': 'a-1', x: '' }, taints: [{ key: 'k', value: 'v', effect: 'NoExecute' }], advertiseAddress: '10.0.0.1' })), []);
  });
  it('names each bad value', () => {
    const got = machineFieldProblems(machine({ nodeLabels: { a: 'b,c=d', 'bad key': 'v' }, taints: [{ key: 'k=1', effect: 'NoSchedule' }], advertiseAddress: '10.0.0.300' }));
    assert.deepEqual(got.map((p) => p.path), ['spec.nodeLabels.a', 'spec.nodeLabels.bad key', 'spec.taints[0].key', 'spec.advertiseAddress']);
  });
  it('a label value of 64 characters is refused, 63 accepted', () => {
    assert.equal(machineFieldProblems(machine({ nodeLabels: { a: 'x'.repeat(63) } })).length, 0);
    assert.equal(machineFieldProblems(machine({ nodeLabels: { a: 'x'.repeat(64) } })).length, 1);
  });
});

describe('nodeValueProblems', () => {
  it('checks init and join registrations (advertise addresses are the builder rule kubeadm-value)', () => {
    const got = nodeValueProblems({
      initConfiguration: { localAPIEndpoint: { advertiseAddress: 'host' }, nodeRegistration: { taints: [{ key: 'ok', value: 'a b' }] } },
      joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-labels': 'a=b,=c' } } },
    });
    assert.deepEqual(got.map((p) => p.path), [
      'spec.kubeadm.initConfiguration.nodeRegistration.taints[0].value',
      'spec.kubeadm.joinConfiguration.nodeRegistration.kubeletExtraArgs.node-labels',
    ]);
    assert.deepEqual(nodeValueProblems(undefined), []);
  });
});

describe('checkWrite: linear in the affected machines', () => {
  let store: SqliteStore;
  const N = 60;
  before(async () => {
    store = await openSqliteStore(':memory:');
    await store.create('Cluster', { name: 'prod', spec: { name: 'prod', controlPlaneEndpoint: 'api.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] } });
    await store.create('Cluster', { name: 'other', spec: { name: 'other', controlPlaneEndpoint: 'api.other.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] } });
    await store.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
    for (let i = 0; i < N; i++) await store.create('Machine', { name: `m-${String(i).padStart(3, '0')}`, spec: machine({ cluster: i % 2 ? 'prod' : 'other' }) });
  });
  after(() => store.close());

  it('a profile write reads each machine once and each cluster once', async () => {
    const reads: string[] = [];
    const counting = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'get') return (kind: string, name: string) => (reads.push(`${kind}/${name}`), target.get(kind as 'Machine', name));
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Store;
    await checkWrite('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.3' } }, { store: counting, maxMachines: N, baseUrl: 'http://127.0.0.1:8080', signingKey: KEY, signedUrlSeconds: 3600 });
    assert.equal(reads.filter((r) => r.startsWith('Machine/')).length, N);
    assert.deepEqual(reads.filter((r) => r.startsWith('Cluster/')).sort(), ['Cluster/other', 'Cluster/prod']);
  });

  it('one machine over the cap is a 422 at metadata.name before any machine is read', async () => {
    await assert.rejects(
      checkWrite('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.3' } }, { store, maxMachines: N - 1, baseUrl: 'http://127.0.0.1:8080', signingKey: KEY, signedUrlSeconds: 3600 }),
      (e) => e instanceof RequestError && e.status === 422 && e.problems[0]!.path === 'metadata.name',
    );
  });
});

describe('checkWrite: what a stored document is excused from (issue 27)', () => {
  let inner: SqliteStore;
  let store: Store;
  const ctx = () => ({ store, maxMachines: 100, baseUrl: 'http://127.0.0.1:8080', signingKey: KEY, signedUrlSeconds: 3600 });
  const legacy = { role: 'worker' as const, kubernetesVersion: 'v1.33.2', provisioning: { preKubeadmCommands: ['echo ready\r'] } };
  before(async () => {
    inner = await openSqliteStore(':memory:');
    await inner.create('Cluster', { name: 'prod', spec: { name: 'prod', controlPlaneEndpoint: 'api.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] } });
    await inner.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
    await inner.create('Machine', { name: 'm-1', spec: machine() });
    // The profile as an earlier release stored it (rules version 0, a CR in a command).
    store = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop !== 'get') return Reflect.get(target, prop, receiver) as unknown;
        return async (kind: 'Cluster' | 'Profile' | 'Machine', name: string) => {
          const r = await target.get(kind, name);
          return kind === 'Profile' ? { ...r, spec: legacy, rules: 0 } : r;
        };
      },
    });
  });
  after(() => inner.close());

  it('a new machine on the stored profile, and a token rotation of its cluster, are not refused for it', async () => {
    await checkWrite('Machine', { name: 'm-2', spec: machine() }, ctx());
    await checkWrite('Cluster', { name: 'prod', spec: { name: 'prod', controlPlaneEndpoint: 'api.example.com:6443', bootstrapToken: 'zyxwvu.0123456789abcdef', caCertHashes: [HASH] } }, ctx());
  });

  it('a write of the profile itself is held to the rule', async () => {
    await assert.rejects(checkWrite('Profile', { name: 'worker', spec: legacy }, ctx()), (e: unknown) => {
      assert.ok(e instanceof RequestError);
      assert.deepEqual(e.problems.map((p) => [p.path, p.rule]), [['spec.provisioning.preKubeadmCommands[0]', 'command-control']]);
      return true;
    });
  });
});
