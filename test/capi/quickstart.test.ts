/**
 * The Cluster API quick start's KubeadmControlPlane `kubeadmConfigSpec` (init and
 * control-plane nodes) and KubeadmConfigTemplate (workers), in v1beta1 and v1beta2,
 * render in every format and pass the real validators and the conformance schemas.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { checkIgnitionRules } from '../../src/provision/ignition/rules.js';
import { checkIgnitionV2Rules } from '../../src/provision/ignition/v2/rules.js';
import { renderNodeBootstrap } from '../../src/render.js';
import { parseNodeBootstrap, validateNodeBootstrap } from '../../src/request/parse.js';
import { cloudConfigFiles } from '../support/decode.js';
import { capiRequest } from '../support/capi.js';
import { cloudInitSchema, ignitionValidate, ignitionValidateKnows, validateCloudConfigSchema, validateIgnitionSchema } from '../support/validators.js';

describe('Cluster API quick start', () => {
  for (const version of ['v1beta1', 'v1beta2'] as const) {
    for (const role of ['init', 'control-plane', 'worker'] as const) {
      it(`${role} from ${version}: cloud-config passes cloud-init schema`, async () => {
        const out = renderNodeBootstrap(validateNodeBootstrap(capiRequest(role, version)), { format: 'cloud-config' });
        assert.ok(out.body.startsWith('#cloud-config\n'));
        assert.deepEqual(validateCloudConfigSchema(out.body), []);
        assert.deepEqual(await cloudInitSchema(out.body), []);
        const kubeadm = (load(out.body) as { write_files: { path: string; content: string }[] }).write_files.find((f) => f.path.startsWith('/run/kubeadm/'))!;
        assert.match(kubeadm.content, /name: eviction-hard\n\s+value: nodefs\.available<0%,nodefs\.inodesFree<0%,imagefs\.available<0%/);
      });

      it(`${role} from ${version}: Ignition 2.3.0 (what CABPK emits) passes the 2.3 schema and rules`, () => {
        const out = renderNodeBootstrap(validateNodeBootstrap(capiRequest(role, version)), { format: 'ignition', ignitionVersion: '2.3.0' });
        assert.equal(out.mediaType, 'application/vnd.coreos.ignition+json; version=2.3.0');
        assert.deepEqual(validateIgnitionSchema(out.body, '2.3.0'), []);
        assert.deepEqual(checkIgnitionV2Rules(JSON.parse(out.body)), []);
      });

      for (const ignitionVersion of ['3.0.0', '3.3.0', '3.4.0', '3.6.0']) {
        it(`${role} from ${version}: Ignition ${ignitionVersion} passes ignition-validate, the schema and the rules`, async () => {
          const out = renderNodeBootstrap(validateNodeBootstrap(capiRequest(role, version)), { format: 'ignition', ignitionVersion });
          assert.equal(out.ignitionVersion, ignitionVersion);
          assert.deepEqual(validateIgnitionSchema(out.body, ignitionVersion), []);
          assert.deepEqual(checkIgnitionRules(JSON.parse(out.body)), []);
          if (ignitionValidateKnows(ignitionVersion)) assert.deepEqual(await ignitionValidate(out.body), []);
        });
      }
    }
  }
});

describe('examples/cluster-api-worker.yaml', () => {
  it('renders to a valid cloud-config with the template filled in and the uninitialized taint', async () => {
    const text = readFileSync(new URL('../../examples/cluster-api-worker.yaml', import.meta.url), 'utf8');
    const out = renderNodeBootstrap(parseNodeBootstrap(text, 'yaml'));
    assert.deepEqual(await cloudInitSchema(out.body), []);
    const files = cloudConfigFiles(out.body);
    assert.equal(files.get('/usr/local/bin/kubeadm-version.sh')!.toString(), '#!/bin/sh\n# The control plane\'s version, filled in by bootwright as CABPK does.\necho "v1.33.2"\n');
    assert.match(files.get('/run/kubeadm/kubeadm-join-config.yaml')!.toString(), /taints:\n {4}- key: node\.cluster\.x-k8s\.io\/uninitialized\n {6}effect: NoSchedule\n/);
  });
});
