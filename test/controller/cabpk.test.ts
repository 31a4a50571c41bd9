/**
 * bootwright's controller beside Cluster API's own kubeadm bootstrap provider (CABPK, the
 * real manager of Cluster API v1.14.0 built from the Go module proxy), on one real
 * management API server, as docs/cluster-api.md#living-beside-cabpk runs them:
 *
 * - split by `cluster.x-k8s.io/watch-filter` (CABPK `kubeadm`, bootwright `bootwright`):
 *   every write to a cluster's objects (data Secrets, KubeadmConfig status and spec) is
 *   made by its own controller only, read from the API server's `managedFields`;
 * - the same KubeadmConfig gives the same node, by meaning: CABPK's cloud-config and
 *   bootwright's, for an init and a worker join, parsed (files with their owner, mode and
 *   content, the kubeadm documents parsed, commands, users, ntp) and compared, tokens and
 *   cluster names aside, with kubeadm's decoding (an empty struct or a null is absent);
 * - a cluster moves to bootwright and back, as the docs say: pause, relabel, wait out
 *   CABPK's requeues, unpause; the new controller writes the next Machine's data and
 *   leaves the data the other wrote as it is.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { load, loadAll } from 'js-yaml';
import { Kube } from '../../src/kube/client.js';
import { type RunningController, startController } from '../../src/controller/run.js';
import { type Cabpk, startCabpk } from '../support/cabpk.js';
import type { ControlPlane } from '../support/controlplane.js';
import { capturedLog } from '../support/logs.js';
import { BOOT, CapiFixtures, CORE, get, managementSkip, mergePatch, startManagement } from '../support/management.js';
import { validateCloudConfigSchema } from '../support/validators.js';

const skip = managementSkip('bootwright beside CABPK', ['kubeadm-bootstrap-manager']);

type Doc = Record<string, unknown>;
type Obj = Doc & { metadata: { resourceVersion: string; managedFields?: { manager: string; subresource?: string; time: string }[] }; data?: Record<string, string> };

const FILTER = 'cluster.x-k8s.io/watch-filter';
/** CABPK's requeue while it refreshes a token: a third of `--bootstrap-token-ttl` (30 s here). */
const CABPK_REQUEUE_MS = 10_000;

/** Whether a decoded kubeadm value is absent to kubeadm: undefined, null, or an empty struct. */
const absent = (v: unknown) => v === undefined || v === null || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0);

/** A value with what kubeadm decodes as absent left out, at any depth. */
function decoded(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(decoded);
  if (typeof v !== 'object' || v === null) return v;
  const out: Doc = {};
  for (const [k, x] of Object.entries(v)) {
    const d = decoded(x);
    if (!absent(d)) out[k] = d;
  }
  return out;
}

/**
 * What a cloud-config means to the node: the Jinja header dropped (cloud-init renders it
 * away), files by path (owner, permissions, content; a kubeadm configuration as its parsed
 * documents, by kind), commands with their white space collapsed, the rest as parsed.
 * Tokens and the cluster's name are replaced by placeholders.
 */
function meaning(text: string, cluster: string): Doc {
  const body = text.startsWith('## template: jinja\n') ? text.slice(text.indexOf('\n') + 1) : text;
  const doc = load(body) as Doc & { write_files?: Doc[]; runcmd?: unknown[] };
  const files: Doc = {};
  for (const f of doc.write_files ?? []) {
    const raw = (typeof f.content === 'string' ? f.content : '')
      .replace(/\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g, '<token>')
      .replaceAll(cluster, '<cluster>');
    const content = /^kind: (?:Init|Join|Cluster)Configuration$/m.test(raw)
      ? (loadAll(raw) as Doc[]).filter(Boolean).map(decoded).sort((a, b) => String((a as Doc).kind).localeCompare(String((b as Doc).kind)))
      : raw.replace(/\n+$/, '\n');
    files[String(f.path)] = { owner: f.owner, permissions: f.permissions, encoding: f.encoding, append: f.append, content };
  }
  const { write_files: _files, runcmd, ...rest } = doc;
  return { files: decoded(files), runcmd: (runcmd ?? []).map((c) => (typeof c === 'string' ? c.replace(/\s+/g, ' ').trim() : c)), ...rest };
}

/** Where two meanings differ, as `path: a | b` lines. */
function differences(a: unknown, b: unknown, at = ''): string[] {
  if (isDeepStrictEqual(a, b)) return [];
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((k) => differences((a as Doc)[k], (b as Doc)[k], `${at}.${k}`));
  }
  return [`${at}: CABPK ${JSON.stringify(a)} | bootwright ${JSON.stringify(b)}`];
}

describe('bootwright beside CABPK on one management cluster', { skip, timeout: 600_000 }, () => {
  let mgmt: ControlPlane;
  let fixtures: CapiFixtures;
  let cabpk: Cabpk | undefined;
  let controller: RunningController | undefined;
  let stop: (() => Promise<void>) | undefined;
  const { log, lines: logLines } = capturedLog('info');

  before(async () => {
    const m = await startManagement();
    ({ mgmt, stop } = m);
    fixtures = new CapiFixtures(mgmt, m.workload);
    cabpk = await startCabpk(mgmt, ['--watch-filter=kubeadm', '--bootstrap-token-ttl=30s']);
    controller = await startController(Kube.fromKubeconfig(mgmt.kubeconfig), { tokenTtlMs: 30_000, ignitionVersion: '2.3', concurrency: 4, identity: 'beside-cabpk', health: { host: '127.0.0.1', port: 0 }, watchFilter: 'bootwright' }, log);
  });
  after(async () => {
    await controller?.stop();
    await cabpk?.stop();
    await stop?.();
  });

  const secret = async (name: string) => (await get(mgmt, 'v1', 'secrets', 'default', name)) as unknown as Obj | undefined;
  const config = async (name: string) => (await get(mgmt, BOOT, 'kubeadmconfigs', 'default', name)) as unknown as Obj;
  /** The data Secret's value once written (CABPK waits 30 s before a worker's data). */
  async function data(name: string, ms = 90_000): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      const s = await secret(name);
      if (s?.data?.value) return Buffer.from(s.data.value, 'base64').toString('utf8');
      if (Date.now() > deadline) assert.fail(`no data Secret ${name} within ${String(ms / 1000)} s\n${cabpk?.logs().slice(-3000) ?? ''}\n${logLines.slice(-20).join('')}`);
      await sleep(250);
    }
  }
  /** Every field manager that wrote the object (or its status). */
  const managers = (o: Obj) => new Set((o.metadata.managedFields ?? []).map((f) => f.manager));
  /** A cluster with an init Machine and a worker, every object labelled for `filter`. */
  async function cluster(name: string, filter: string): Promise<void> {
    await fixtures.cluster(name, {}, { [FILTER]: filter });
    await fixtures.clusterStatus(name, { initialization: { infrastructureProvisioned: true } });
    await fixtures.machine(name, `${name}-cp-a`, 'control-plane', undefined, {}, { [FILTER]: filter });
    await fixtures.machine(name, `${name}-md-0-a`, 'worker', undefined, {}, { [FILTER]: filter });
  }
  /** Relabel a cluster's objects as KubeadmControlPlane and MachineSet propagate the label, and the Cluster. */
  async function relabel(name: string, filter: string, machines: string[]): Promise<void> {
    const labels = { metadata: { labels: { [FILTER]: filter } } };
    await mergePatch(mgmt, CORE, 'clusters', 'default', name, labels);
    await mergePatch(mgmt, 'controlplane.cluster.x-k8s.io/v1beta2', 'kubeadmcontrolplanes', 'default', `${name}-control-plane`, labels);
    for (const m of machines) {
      await mergePatch(mgmt, CORE, 'machines', 'default', m, labels);
      await mergePatch(mgmt, BOOT, 'kubeadmconfigs', 'default', m, labels);
    }
  }

  it('each cluster is written by its own controller only; the same KubeadmConfig means the same node', async () => {
    await cluster('legacy', 'kubeadm');
    await cluster('moved', 'bootwright');
    const initCabpk = await data('legacy-cp-a');
    const initOurs = await data('moved-cp-a');
    for (const c of ['legacy', 'moved']) await fixtures.clusterStatus(c, { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    const workerCabpk = await data('legacy-md-0-a');
    const workerOurs = await data('moved-md-0-a');

    for (const name of ['legacy-cp-a', 'legacy-md-0-a']) {
      assert.deepEqual([...managers((await secret(name))!)], [cabpk!.manager], `${name}'s data Secret`);
      assert.ok(!managers(await config(name)).has('bootwright'), `bootwright never wrote ${name}`);
    }
    for (const name of ['moved-cp-a', 'moved-md-0-a']) {
      assert.deepEqual([...managers((await secret(name))!)], ['bootwright'], `${name}'s data Secret`);
      assert.ok(!managers(await config(name)).has(cabpk!.manager), `CABPK never wrote ${name}`);
    }
    assert.deepEqual(validateCloudConfigSchema(initOurs), []);
    assert.deepEqual(differences(meaning(initCabpk, 'legacy'), meaning(initOurs, 'moved')), [], 'init');
    assert.deepEqual(differences(meaning(workerCabpk, 'legacy'), meaning(workerOurs, 'moved')), [], 'worker join');
  });

  it('a running cluster moves to bootwright and back: pause, relabel, wait out the requeues, unpause', async () => {
    const paused = (p: boolean) => mergePatch(mgmt, CORE, 'clusters', 'default', 'legacy', { spec: { paused: p } });

    // Switch.
    const before = { cp: (await secret('legacy-cp-a'))!.metadata.resourceVersion, worker: (await secret('legacy-md-0-a'))!.metadata.resourceVersion };
    await paused(true);
    await relabel('legacy', 'bootwright', ['legacy-cp-a', 'legacy-md-0-a']);
    await sleep(CABPK_REQUEUE_MS + 2_000);
    await paused(false);
    await fixtures.machine('legacy', 'legacy-md-0-b', 'worker', undefined, {}, { [FILTER]: 'bootwright' });
    await data('legacy-md-0-b', 30_000);
    assert.deepEqual([...managers((await secret('legacy-md-0-b'))!)], ['bootwright'], "the next Machine's data is bootwright's");
    // bootwright takes the configs CABPK wrote (their status), and leaves their data as it is.
    const deadline = Date.now() + 30_000;
    while (!managers(await config('legacy-md-0-a')).has('bootwright')) {
      if (Date.now() > deadline) assert.fail('bootwright did not take legacy-md-0-a');
      await sleep(250);
    }
    assert.equal((await secret('legacy-cp-a'))!.metadata.resourceVersion, before.cp);
    assert.equal((await secret('legacy-md-0-a'))!.metadata.resourceVersion, before.worker);

    // Roll back.
    const ours = (await secret('legacy-md-0-b'))!.metadata.resourceVersion;
    await paused(true);
    await relabel('legacy', 'kubeadm', ['legacy-cp-a', 'legacy-md-0-a', 'legacy-md-0-b']);
    await sleep(2_000);
    await paused(false);
    await fixtures.machine('legacy', 'legacy-md-0-c', 'worker', undefined, {}, { [FILTER]: 'kubeadm' });
    await data('legacy-md-0-c');
    assert.deepEqual([...managers((await secret('legacy-md-0-c'))!)], [cabpk!.manager], "after the roll back the next Machine's data is CABPK's");
    assert.equal((await secret('legacy-md-0-b'))!.metadata.resourceVersion, ours, 'CABPK leaves the data bootwright wrote as it is');
    // After the switch back bootwright writes nothing of the cluster's.
    const status = (await config('legacy-md-0-c')).metadata.managedFields ?? [];
    assert.ok(!status.some((f) => f.manager === 'bootwright'), 'bootwright never wrote legacy-md-0-c');
    assert.deepEqual(logLines.filter((l) => l.includes('"level":50')), []);
  });
});
