/**
 * Golden outputs: role × format × kubeadm API version, compared byte for byte, and every
 * golden checked by the real validators and the conformance schemas.
 *
 * Regenerate after an intended change with `UPDATE_GOLDEN=1 npm test` and review the diff:
 * a changed golden means nodes built from a pinned request would get different bytes.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { renderNodeBootstrap } from '../src/render.js';
import { validateNodeBootstrap } from '../src/request/parse.js';
import { checkIgnitionRules } from '../src/provision/ignition/rules.js';
import { checkIgnitionV2Rules } from '../src/provision/ignition/v2/rules.js';
import { RENDERER_VERSION } from '../src/version.js';
import { capiRequest } from './support/capi.js';
import { example } from './support/requests.js';
import { GOLDEN_PROVISIONING } from './support/suite-requests.js';
import { cloudInitSchema, ignitionValidate, ignitionValidateKnows, validateCloudConfigSchema, validateIgnitionSchema } from './support/validators.js';

const GOLDEN_DIR = new URL('./golden/', import.meta.url);
const update = process.env.UPDATE_GOLDEN === '1';

/** Kubernetes versions chosen to land on each kubeadm API version. */
const KUBE_VERSIONS = { v1beta3: 'v1.30.14', v1beta4: 'v1.33.2' } as const;
const ROLES = ['init', 'control-plane', 'worker'] as const;
const FORMATS = [
  ['cloud-config', 'cloud-config.yaml'],
  ['ignition', 'ign.json'],
] as const;

/** A golden passes every validator of its format: the schemas, the rules, the real tools. */
async function validates(format: 'cloud-config' | 'ignition', body: string, version: string | undefined): Promise<void> {
  if (format === 'cloud-config') {
    assert.deepEqual(validateCloudConfigSchema(body), []);
    assert.deepEqual(await cloudInitSchema(body), []);
  } else {
    assert.deepEqual(validateIgnitionSchema(body, version!), []);
    assert.deepEqual(checkIgnitionRules(JSON.parse(body)), []);
    if (ignitionValidateKnows(version!)) assert.deepEqual(await ignitionValidate(body), []);
  }
}

describe('golden outputs', () => {
  for (const role of ROLES) {
    for (const [api, kubernetesVersion] of Object.entries(KUBE_VERSIONS)) {
      for (const [format, ext] of FORMATS) {
        const name = `${role}-${api}.${ext}`;
        it(name, async () => {
          const req = example(role);
          req.spec.kubernetesVersion = kubernetesVersion;
          const out = renderNodeBootstrap(validateNodeBootstrap(req), { format });
          assert.equal(out.kubeadmApiVersion, `kubeadm.k8s.io/${api}`);
          const file = new URL(name, GOLDEN_DIR);
          if (update) {
            mkdirSync(GOLDEN_DIR, { recursive: true });
            writeFileSync(file, out.body);
          }
          assert.equal(out.body, readFileSync(file, 'utf8'), `${name} differs from the golden; if intended, UPDATE_GOLDEN=1 npm test`);
          await validates(format, out.body, out.ignitionVersion);
        });
      }
    }
  }

  // Ignition spec 2.3.0 (older Flatcar): the roles that differ most, at the current kubeadm API.
  for (const role of ['init', 'worker'] as const) {
    const name = `${role}-v1beta4.ign-2.3.0.json`;
    it(name, () => {
      const req = example(role);
      req.spec.kubernetesVersion = KUBE_VERSIONS.v1beta4;
      const out = renderNodeBootstrap(validateNodeBootstrap(req), { format: 'ignition', ignitionVersion: '2.3.0' });
      assert.equal(out.ignitionVersion, '2.3.0');
      const file = new URL(name, GOLDEN_DIR);
      if (update) writeFileSync(file, out.body);
      assert.equal(out.body, readFileSync(file, 'utf8'), `${name} differs from the golden; if intended, UPDATE_GOLDEN=1 npm test`);
      assert.deepEqual(validateIgnitionSchema(out.body, '2.3.0'), []);
      assert.deepEqual(checkIgnitionV2Rules(JSON.parse(out.body)), []);
    });
  }

  // Cluster API input (the quick start in v1beta2 shapes): the node CABPK would build,
  // pinned like the native requests' goldens.
  for (const role of ['init', 'worker'] as const) {
    for (const [ext, options] of [
      ['cloud-config.yaml', { format: 'cloud-config' }],
      ['ign.json', { format: 'ignition' }],
      ['ign-2.3.0.json', { format: 'ignition', ignitionVersion: '2.3.0' }],
    ] as const) {
      const name = `capi-${role}.${ext}`;
      it(name, async () => {
        const out = renderNodeBootstrap(validateNodeBootstrap(capiRequest(role, 'v1beta2')), options);
        const file = new URL(name, GOLDEN_DIR);
        if (update) writeFileSync(file, out.body);
        assert.equal(out.body, readFileSync(file, 'utf8'), `${name} differs from the golden; if intended, UPDATE_GOLDEN=1 npm test`);
        if (out.format === 'cloud-config') assert.deepEqual(await cloudInitSchema(out.body), []);
        else assert.deepEqual(validateIgnitionSchema(out.body, out.ignitionVersion!), []);
      });
    }
  }

  // Provisioning the plan checks and both renderers must agree on: a user in groups the
  // image may lack, a file under that user's home, a numbered NVMe partition, a mount
  // point with a space, and ntp.enabled: false.
  for (const [format, ext] of FORMATS) {
    const name = `provisioning-v1beta4.${ext}`;
    it(name, async () => {
      const req = example('worker');
      req.spec.provisioning = GOLDEN_PROVISIONING;
      const out = renderNodeBootstrap(validateNodeBootstrap(req), { format });
      const file = new URL(name, GOLDEN_DIR);
      if (update) writeFileSync(file, out.body);
      assert.equal(out.body, readFileSync(file, 'utf8'), `${name} differs from the golden; if intended, UPDATE_GOLDEN=1 npm test`);
      await validates(format, out.body, out.ignitionVersion);
    });
  }

  // Data served for a stored machine carries its boot report (src/provision/plan/report.ts):
  // the report script, kubeadm's output and status kept, and the report run from runcmd
  // or the Ignition units. The URL is a fixed signed-URL shape, as /ignition and /nocloud pass it.
  for (const [ext, options] of [
    ['cloud-config.yaml', { format: 'cloud-config' }],
    ['ign.json', { format: 'ignition' }],
    ['ign-2.3.0.json', { format: 'ignition', ignitionVersion: '2.3.0' }],
  ] as const) {
    const name = `report-v1beta4.${ext}`;
    it(name, async () => {
      const req = example('worker');
      req.spec.kubernetesVersion = KUBE_VERSIONS.v1beta4;
      const reportUrl = `http://10.0.0.1:8080/report?machine=worker-a&exp=1893456000&sig=${'A'.repeat(43)}`;
      const out = renderNodeBootstrap(validateNodeBootstrap(req), { ...options, reportUrl });
      const file = new URL(name, GOLDEN_DIR);
      if (update) writeFileSync(file, out.body);
      assert.equal(out.body, readFileSync(file, 'utf8'), `${name} differs from the golden; if intended, UPDATE_GOLDEN=1 npm test`);
      if (out.ignitionVersion === '2.3.0') {
        assert.deepEqual(validateIgnitionSchema(out.body, '2.3.0'), []);
        assert.deepEqual(checkIgnitionV2Rules(JSON.parse(out.body)), []);
      } else await validates(out.format, out.body, out.ignitionVersion);
    });
  }

  // Runs after the goldens above (node:test runs a suite's tests in order). A golden
  // added for a new output (no existing bytes changed, so no cache holds a stale copy)
  // only re-locks the digest, at the same RENDERER_VERSION.
  it('RENDERER_VERSION changes whenever a golden does (render caches key on it)', () => {
    const lockFile = new URL('LOCK', GOLDEN_DIR);
    const digest = createHash('sha256');
    for (const name of readdirSync(GOLDEN_DIR).filter((n) => n !== 'LOCK').sort()) digest.update(`${name}\n`).update(readFileSync(new URL(name, GOLDEN_DIR)));
    const current = `${RENDERER_VERSION} ${digest.digest('hex')}\n`;
    const locked = readFileSync(lockFile, 'utf8');
    if (update && current !== locked) {
      assert.notEqual(locked.split(' ')[0], RENDERER_VERSION, 'the goldens changed: bump RENDERER_VERSION in src/version.ts, then UPDATE_GOLDEN=1 npm test again');
      writeFileSync(lockFile, current);
    }
    assert.equal(readFileSync(lockFile, 'utf8'), current, 'outputs changed without a RENDERER_VERSION bump: bump it in src/version.ts and run UPDATE_GOLDEN=1 npm test');
  });
});
