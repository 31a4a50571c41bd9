/**
 * Boot paths are protected (issue 11 C), once, in the provider-neutral plan: no request
 * file or mount point sits at, below, or (as a file) above a path bootwright needs, in
 * either output format. Only what bootwright writes is reserved (issue 27): four trees
 * since v0.1.0 and exact paths. A property test (fast-check) against an independent
 * model of "at, below or above", through validation and both renderers.
 */
import { KUBEADM_LOG, KUBEADM_RC, REPORT_SCRIPT } from '../../../src/provision/plan/report.js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { RequestError } from '../../../src/errors.js';
import { CLOUD_CONFIG_KUBEADM_DIR } from '../../../src/provision/cloudinit/render.js';
import { BOOTCMD_UNIT, BOOTSTRAP_UNIT, CAPI_BOOTSTRAP_SCRIPT, CAPI_BOOTSTRAP_UNIT, CAPI_KUBEADM_CONFIG, KUBEADM_DIR } from '../../../src/provision/ignition/bootstrap.js';
import { GROUPS_SCRIPT } from '../../../src/provision/ignition/groups.js';
import { METADATA_SCRIPT } from '../../../src/provision/ignition/metadata.js';
import { UNIT_DIR } from '../../../src/provision/ignition/registry.js';
import { BOOT_FILES, BOOT_TREES, BOOT_UNITS, BOOTSTRAP_STAMP, BOOTSTRAP_STATE_DIR, bootPathProblem, SYSTEMD_UNIT_DIR } from '../../../src/provision/plan/protected.js';
import { SUCCESS_SENTINEL } from '../../../src/provision/plan/types.js';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { worker } from '../../support/requests.js';

/** The problems of validating and rendering `req` in `format`, [] when it renders. */
function problems(req: Record<string, unknown>, format: 'cloud-config' | 'ignition'): { path: string; message: string }[] {
  try {
    renderNodeBootstrap(validateNodeBootstrap(req), { format });
    return [];
  } catch (e) {
    if (e instanceof RequestError) return e.problems;
    throw e;
  }
}

/** Independent model: `p` at or below `q`, or `p` a proper ancestor of `q`. */
const atOrBelow = (p: string, q: string) => p === q || p.startsWith(`${q}/`);
const above = (p: string, q: string) => q.startsWith(`${p}/`);

describe('the boot paths', () => {
  it('are the paths the renderers write: four trees reserved since v0.1.0, and exact paths outside them', () => {
    assert.ok(atOrBelow(BOOTSTRAP_STAMP, BOOTSTRAP_STATE_DIR));
    assert.equal(SYSTEMD_UNIT_DIR, UNIT_DIR);
    // v0.1.0's reserved trees (src/request/checks.ts GENERATED_PATH_PREFIXES then), and nothing more.
    assert.deepEqual([...BOOT_TREES].sort(), ['/etc/kubeadm', '/etc/kubernetes/pki', '/run/cluster-api', '/run/kubeadm']);
    assert.deepEqual([...BOOT_UNITS.bootwright].sort(), [BOOTCMD_UNIT, BOOTSTRAP_UNIT].sort());
    assert.deepEqual([...BOOT_UNITS['cluster-api']].sort(), [BOOTCMD_UNIT, CAPI_BOOTSTRAP_UNIT].sort());
    // Everything bootwright writes later than v0.1.0 is under those trees.
    for (const p of [KUBEADM_DIR, METADATA_SCRIPT, GROUPS_SCRIPT, CLOUD_CONFIG_KUBEADM_DIR, SUCCESS_SENTINEL, REPORT_SCRIPT, KUBEADM_LOG, KUBEADM_RC]) {
      assert.ok(BOOT_TREES.some((t) => atOrBelow(p, t)), p);
    }
    assert.deepEqual([...BOOT_FILES['cluster-api']].filter((p) => !BOOT_FILES.bootwright.includes(p)).sort(), [CAPI_BOOTSTRAP_SCRIPT, CAPI_KUBEADM_CONFIG, `${UNIT_DIR}/${CAPI_BOOTSTRAP_UNIT}`].sort());
  });

  for (const format of ['cloud-config', 'ignition'] as const) {
    it(`${format}: what an earlier release stored near bootwright's paths is not refused (issue 27)`, () => {
      for (const path of ['/etc/bootwright/site.conf', '/etc/bootwright', `${BOOTSTRAP_STATE_DIR}/inventory.json`, '/etc/kubeadm.yml', '/etc/kubeadm.sh', `${UNIT_DIR}/${CAPI_BOOTSTRAP_UNIT}`, `${UNIT_DIR}/kubeadm-groups.service`, `${UNIT_DIR}/kubeadm-report-failure.service`]) {
        assert.deepEqual(problems(worker({ provisioning: { files: [{ path, content: 'x' }] } }), format), [], path);
      }
    });
  }

  for (const format of ['cloud-config', 'ignition'] as const) {
    it(`${format}: a request file at the stamp, under the state directory, at a unit or above them is a 422 at the file`, () => {
      for (const path of [BOOTSTRAP_STAMP, `${BOOTSTRAP_STAMP}/x`, BOOTSTRAP_STATE_DIR, '/var/lib', '/var', `${UNIT_DIR}/${BOOTSTRAP_UNIT}`, `${UNIT_DIR}/${BOOTCMD_UNIT}`, UNIT_DIR, '/etc/systemd']) {
        const got = problems(worker({ provisioning: { files: [{ path: '/etc/ok', content: 'x' }, { path, content: 'x' }] } }), format);
        assert.deepEqual(got.map((p) => p.path), ['spec.provisioning.files[1].path'], `${path}: ${JSON.stringify(got)}`);
      }
    });

    it(`${format}: a mount point at or under a boot tree or path is a 422 at the mount point; above one it is fine`, () => {
      const got = problems(worker({ provisioning: { mounts: [['/dev/sdb1', '/var/lib'], ['/dev/sdc1', BOOTSTRAP_STATE_DIR], ['/dev/sdd1', '/run/cluster-api/x'], ['/dev/sde1', '/etc/kubernetes/pki']] } }), format);
      assert.deepEqual(got.map((p) => p.path), ['spec.provisioning.mounts[2][1]', 'spec.provisioning.mounts[3][1]']);
    });

    it(`${format}: a drop-in for the bootstrap unit stays allowed`, () => {
      assert.deepEqual(problems(worker({ provisioning: { files: [{ path: `${UNIT_DIR}/${BOOTSTRAP_UNIT}.d/10-env.conf`, content: '[Service]\nEnvironment=A=1\n' }] } }), format), []);
    });
  }

  it('property: bootPathProblem agrees with the model, and both formats refuse exactly the modelled paths', () => {
    const segment = fc.constantFrom('etc', 'var', 'lib', 'bootwright', 'kubeadm', 'run', 'cluster-api', 'kubernetes', 'pki', 'systemd', 'system', BOOTSTRAP_UNIT, `${BOOTSTRAP_UNIT}.d`, 'kubeadm-bootstrap.done', 'opt', 'x');
    const path = fc.array(segment, { minLength: 1, maxLength: 5 }).map((s) => `/${s.join('/')}`);
    const kind = fc.constantFrom('file' as const, 'link' as const, 'directory' as const);
    fc.assert(
      fc.property(path, kind, (p, k) => {
        const refused = BOOT_TREES.some((q) => atOrBelow(p, q) || (k !== 'directory' && above(p, q))) || BOOT_FILES.bootwright.some((q) => atOrBelow(p, q) || (k !== 'directory' && above(p, q)));
        assert.equal(bootPathProblem(p, k) !== undefined, refused, `${k} ${p}`);
        if (k !== 'file') return;
        const req = worker({ provisioning: { files: [{ path: p, content: 'x' }] } });
        const cc = problems(req, 'cloud-config');
        if (refused) {
          assert.deepEqual(cc.map((x) => x.path), ['spec.provisioning.files[0].path'], p);
          assert.ok(problems(req, 'ignition').some((x) => x.path === 'spec.provisioning.files[0].path'), p);
        } else {
          assert.deepEqual(cc, [], p);
        }
      }),
      { numRuns: 400 },
    );
  });
});
