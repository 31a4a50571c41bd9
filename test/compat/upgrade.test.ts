/**
 * Upgrades (issue 27, docs/design.md §8): an earlier release, built from this
 * repository's history (test/support/releases.ts), stores a broad corpus of clusters,
 * profiles and machines (test/compat/corpus.ts) on SQLite and on PostgreSQL, in both
 * formats, and boots each machine once. Then `bootwright upgrade check` of this tree
 * reads the store it left, and this tree's service takes the store over. Every machine
 * the earlier release booted must boot again as a machine does: `/ipxe` answers a
 * script carrying its config URL, the config URL answers 200, and what it serves passes
 * the real validators (cloud-init's schema and `cloud-init schema`; Ignition's schema,
 * rules and `ignition-validate`). Then the earlier release is started again on the
 * migrated store (a rollback), and boots them all again too.
 *
 * Building a release takes minutes the first time on a machine (it is cached). Skipped
 * loudly without the repository's history or npm, failed under CI; not run when
 * `BOOTWRIGHT_TEST_UPGRADE=0` (CI's second pass, on another Node.js: what it tests is
 * data, not the runtime).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { checkIgnitionRules } from '../../src/provision/ignition/rules.js';
import { missingDependency } from '../support/missing.js';
import { createDatabase, dropDatabase, maskUrl } from '../support/postgres.js';
import { type ServeProcess, startProcess } from '../support/process.js';
import { BASELINE_COMMIT, buildRelease, type Release, RELEASES, REPO, upgradeSources } from '../support/releases.js';
import { cloudInitSchema, ignitionValidate, ignitionValidateKnows, validateCloudConfigSchema, validateIgnitionSchema } from '../support/validators.js';
import { type Converter, type StoredCase, storedCases } from './corpus.js';

const run = promisify(execFile);

const ADMIN = 'upgrade-admin-token-0123456789';
/** What Debian's Ignition 2.14 sends (spec 3.3.0, which its ignition-validate knows). */
const IGNITION_ACCEPT = 'application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1';
/** What cloud-init's url_helper sends. */
const CLOUD_INIT_UA = 'Cloud-Init/22.4.2';

const skip = process.env.BOOTWRIGHT_TEST_UPGRADE === '0' ? '*** SKIPPED: BOOTWRIGHT_TEST_UPGRADE=0: upgrades from earlier releases are NOT tested in this pass ***' : false;
if (skip) process.stderr.write(`\n${skip}\n\n`);

let sources: Release[] = [];
let sourcesProblem: string | undefined;
try {
  sources = skip ? [] : await upgradeSources();
} catch (e) {
  sourcesProblem = (e as Error).message;
}

describe('the releases upgraded from', () => {
  it('are v0.1.0 and the newest release before this tree, tags or not', { skip: skip || sourcesProblem !== undefined }, () => {
    // Every recorded release is an ancestor of this tree, so the newest is the last one
    // recorded unless a newer tag exists; either way, two sources and the baseline first.
    assert.equal(sources[0]?.name, 'v0.1.0');
    assert.equal(sources.length, 2, JSON.stringify(sources));
    const newest = RELEASES[RELEASES.length - 1]!;
    // The newest recorded release, or a tag made after it (not in the list).
    assert.ok(sources[1]!.commit === newest.commit || !RELEASES.some((r) => r.commit === sources[1]!.commit), JSON.stringify(sources));
  });
});

/** A store an earlier release writes and this tree takes over. */
interface StoreUnderTest {
  name: 'sqlite' | 'postgres';
  env: Record<string, string>;
  /** Removes what the store left. */
  cleanup: () => Promise<void>;
}

function sqliteStore(): StoreUnderTest {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bootwright-upgrade-'));
  return {
    name: 'sqlite',
    env: { BOOTWRIGHT_DATA_DIR: dir },
    cleanup: () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

async function postgresStore(): Promise<StoreUnderTest | string> {
  try {
    const db = await createDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bootwright-upgrade-pg-'));
    return {
      name: 'postgres',
      env: { BOOTWRIGHT_DATABASE_URL: db.url, BOOTWRIGHT_DATA_DIR: dir },
      cleanup: async () => {
        await dropDatabase(db.name);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    return `PostgreSQL not reachable (${(e as Error).message}); set BOOTWRIGHT_TEST_DATABASE_URL`;
  }
}

/** The environment every service of the test gets beside its store's. */
const serviceEnv = (store: StoreUnderTest): Record<string, string> => ({
  ...store.env,
  BOOTWRIGHT_HOST: '127.0.0.1',
  // info: the test learns the port from the line saying the service listens.
  BOOTWRIGHT_LOG_LEVEL: 'info',
  BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'admin', token: ADMIN, scopes: ['admin'] }]),
  BOOTWRIGHT_RATE_LIMIT_MAX: '1000000',
  // Both releases sign with the same key (a deployment keeps its key across an upgrade).
  BOOTWRIGHT_URL_SIGNING_KEY: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
});

async function stop(p: ServeProcess): Promise<void> {
  p.child.kill('SIGTERM');
  await p.exited;
}

async function post(base: string, collection: string, kind: string, name: string, spec: unknown): Promise<Response> {
  return fetch(`${base}/v1/${collection}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'bootwright.dev/v1alpha1', kind, metadata: { name }, spec }),
  });
}

/** Store a case's cluster, profile and machine; false when the release refuses any (it was not storable there). */
async function store(base: string, c: StoredCase): Promise<boolean> {
  for (const [collection, kind, name, spec] of [
    ['clusters', 'Cluster', `c-${c.id}`, c.cluster],
    ['profiles', 'Profile', `p-${c.id}`, c.profile],
    ['machines', 'Machine', `m-${c.id}`, c.machine],
  ] as const) {
    const res = await post(base, collection, kind, name, spec);
    await res.arrayBuffer();
    if (res.status !== 201) return false;
  }
  return true;
}

/** What a machine's boot got: the config it was served, or why it got none. */
type Boot = { ok: true; body: string; mediaType: string } | { ok: false; why: string };

/**
 * Boot a machine as its firmware and first-boot agent do: `/ipxe` with its MAC, then the
 * config URL of the script (Ignition's Accept, or cloud-init's NoCloud `user-data` and
 * `meta-data`).
 */
async function boot(base: string, c: StoredCase): Promise<Boot> {
  const ipxe = await fetch(`${base}/ipxe?mac=${c.mac}`, { headers: { 'user-agent': 'iPXE/1.21.1' } });
  const script = await ipxe.text();
  if (ipxe.status !== 200) return { ok: false, why: `/ipxe answered ${ipxe.status}: ${script.slice(0, 300)}` };
  const url = /ignition\.config\.url=(\S+)/.exec(script)?.[1] ?? /\bds=nocloud(?:-net)?;s=(\S+)/.exec(script)?.[1];
  if (url === undefined) return { ok: false, why: `the /ipxe script carries no config URL:\n${script}` };
  if (c.format === 'ignition') {
    const res = await fetch(url, { headers: { accept: IGNITION_ACCEPT, 'user-agent': 'Ignition/2.14.0' } });
    const body = await res.text();
    if (res.status !== 200) return { ok: false, why: `${new URL(url).pathname} answered ${res.status}: ${body.slice(0, 600)}` };
    return { ok: true, body, mediaType: res.headers.get('content-type') ?? '' };
  }
  const meta = await fetch(`${url}meta-data`, { headers: { 'user-agent': CLOUD_INIT_UA } });
  await meta.arrayBuffer();
  if (meta.status !== 200) return { ok: false, why: `meta-data answered ${meta.status}` };
  const res = await fetch(`${url}user-data`, { headers: { 'user-agent': CLOUD_INIT_UA } });
  const body = await res.text();
  if (res.status !== 200) return { ok: false, why: `user-data answered ${res.status}: ${body.slice(0, 600)}` };
  return { ok: true, body, mediaType: res.headers.get('content-type') ?? '' };
}

/** What the real validators say of a served config ([] when it passes). */
async function validatorProblems(c: StoredCase, served: { body: string; mediaType: string }): Promise<string[]> {
  if (c.format === 'cloud-config') return [...validateCloudConfigSchema(served.body), ...(await cloudInitSchema(served.body))];
  const version = /version=([0-9.]+)/.exec(served.mediaType)?.[1] ?? '';
  const problems = [...validateIgnitionSchema(served.body, version), ...checkIgnitionRules(JSON.parse(served.body) as Record<string, unknown>).map((p) => `${p.path}: ${p.message}`)];
  if (ignitionValidateKnows(version)) problems.push(...(await ignitionValidate(served.body)));
  return problems;
}

/** Run `bootwright upgrade check -o json` of this tree against the store. */
async function upgradeCheck(store: StoreUnderTest): Promise<{ code: number; report: UpgradeReport; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'upgrade', 'check', '-o', 'json'], { cwd: REPO, env: { ...process.env, ...serviceEnv(store) }, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, report: JSON.parse(stdout) as UpgradeReport, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    if (typeof err.code !== 'number' || !err.stdout) throw e;
    return { code: err.code, report: JSON.parse(err.stdout) as UpgradeReport, stderr: err.stderr ?? '' };
  }
}

/** `bootwright upgrade check -o json` (src/compat/check.ts). */
interface UpgradeReport {
  machines: { machine: string; result: 'ok' | 'changed' | 'warn' | 'fail'; problems: { rule?: string; path: string; message: string }[] }[];
  summary: Record<string, number>;
}

for (const release of sources) {
  describe(`upgrade from ${release.name}`, { concurrency: false }, () => {
    let dir: string | undefined;
    let buildProblem: string | undefined;
    let convert: Converter | undefined;

    before(async () => {
      try {
        dir = await buildRelease(release, (line) => process.stderr.write(`${line}\n`));
        const parse = (await import(path.join(dir, 'dist/request/parse.js'))) as { validateNodeBootstrap: Converter };
        convert = parse.validateNodeBootstrap;
      } catch (e) {
        buildProblem = (e as Error).message;
      }
    });

    for (const storeKind of ['sqlite', 'postgres'] as const) {
      it(`a store ${release.name} wrote on ${storeKind} boots every machine it booted`, { timeout: 20 * 60_000 }, async (t) => {
        if (buildProblem !== undefined) {
          const why = missingDependency(`upgrade from ${release.name}: the release could not be built (${buildProblem.split('\n')[0] ?? ''})`);
          if (why) {
            t.skip(why);
            return;
          }
          assert.fail(buildProblem);
        }
        const made = storeKind === 'sqlite' ? sqliteStore() : await postgresStore();
        if (typeof made === 'string') {
          const why = missingDependency(`upgrade on PostgreSQL: ${made}`);
          if (why) {
            t.skip(why);
            return;
          }
          assert.fail(made);
        }
        const st = made;
        after(() => st.cleanup());
        const cases = storedCases(convert!);

        // The earlier release stores the corpus and boots each machine once.
        const old = startProcess(serviceEnv(st), [path.join(dir!, 'dist/cli.js'), 'serve']);
        const oldBase = `http://127.0.0.1:${await old.port}`;
        const booted: StoredCase[] = [];
        let stored = 0;
        try {
          for (const c of cases) {
            if (!(await store(oldBase, c))) continue;
            stored++;
            if ((await boot(oldBase, c)).ok) booted.push(c);
          }
        } finally {
          await stop(old);
        }
        t.diagnostic(`${release.name} on ${storeKind}: ${cases.length} cases, ${stored} stored, ${booted.length} booted (${st.name === 'postgres' ? maskUrl(st.env.BOOTWRIGHT_DATABASE_URL!) : (st.env.BOOTWRIGHT_DATA_DIR ?? '')})`);
        assert.ok(booted.length >= cases.length / 2, `only ${booted.length} of ${cases.length} cases booted on ${release.name}: the corpus is not broad`);
        // The baseline came before the rules (v0.1.0, rules 0): it stores what they refuse.
        // A later release stores only what its own rules accept.
        const baseline = release.commit === BASELINE_COMMIT;
        const since = booted.filter((c) => c.id.startsWith('since-'));
        if (baseline) assert.ok(since.length >= 10, `the inputs later rules refuse were not stored and booted by ${release.name} (${since.length})`);
        else assert.ok(booted.some((c) => c.id === 'since-etc-bootwright-cc'), `${release.name} did not store issue 27's machine`);

        // Before the upgrade: the check reads the store and finds nothing that would fail.
        const check = await upgradeCheck(st);
        const byMachine = new Map(check.report.machines.map((m) => [m.machine, m]));
        const failing = check.report.machines.filter((m) => m.result === 'fail' && booted.some((c) => `m-${c.id}` === m.machine));
        assert.deepEqual(failing, [], 'upgrade check: machines the earlier release booted would fail');
        // It exits 1 exactly when some machine would fail: here only those the earlier release could not boot either.
        assert.equal(check.code, check.report.summary.fail! > 0 ? 1 : 0, check.stderr);
        for (const c of booted) assert.ok(byMachine.has(`m-${c.id}`), `upgrade check lists m-${c.id}`);
        // Issue 27's machine is no longer refused: it boots, with what renderers 2 to 4 changed
        // since the release that served it (a boot report, for one); what a later rule
        // refuses is a warning.
        // From a release with today's renderer and rules, it is simply ok.
        const issue = byMachine.get('m-since-etc-bootwright-cc') as (UpgradeReport['machines'][number] & { changes: string[] }) | undefined;
        if (baseline) {
          assert.equal(issue?.result, 'changed', JSON.stringify(issue));
          assert.ok(issue.changes.some((c) => c.startsWith('renderer 3: ') && c.includes('boot report')), JSON.stringify(issue));
          const cr = byMachine.get('m-since-command-cr-cc');
          assert.equal(cr?.result, 'warn', JSON.stringify(cr));
          assert.ok(cr.problems.some((p) => p.rule === 'command-control' && p.path === 'spec.provisioning.preKubeadmCommands[0]'), JSON.stringify(cr));
        } else {
          assert.equal(issue?.result, 'ok', JSON.stringify(issue));
        }

        // This tree takes the store over: every machine boots again.
        const current = startProcess(serviceEnv(st));
        const base = `http://127.0.0.1:${await current.port}`;
        try {
          const broken: string[] = [];
          for (const c of booted) {
            const b = await boot(base, c);
            if (!b.ok) {
              broken.push(`m-${c.id} (${c.source}): ${b.why}`);
              continue;
            }
            const problems = await validatorProblems(c, b);
            if (problems.length > 0) broken.push(`m-${c.id} (${c.source}): the validators refuse what it was served: ${problems.join('; ')}`);
          }
          assert.deepEqual(broken, [], `${broken.length} machines ${release.name} booted do not boot after the upgrade`);

          if (baseline) {
            // What a later rule would refuse is shown on the machine's status.
            const res = await fetch(`${base}/v1/machines/m-since-command-cr-cc`, { headers: { authorization: `Bearer ${ADMIN}` } });
            const machine = (await res.json()) as { status: { warnings?: { rule: string; path: string }[] } };
            assert.ok(machine.status.warnings?.some((w) => w.rule === 'command-control'), JSON.stringify(machine.status));
            const metrics = await (await fetch(`${base}/metrics`)).text();
            assert.match(metrics, /bootwright_tolerated_total\{rule="command-control"\} [1-9]/);
          }
        } finally {
          await stop(current);
        }

        if (!baseline) {
          // A document using a field the earlier release would misread (it would boot the
          // machine without its network): while it is stored, the earlier release refuses
          // to start, naming the schema it needs; once it is gone, it starts.
          const again = startProcess(serviceEnv(st));
          const againBase = `http://127.0.0.1:${await again.port}`;
          const donor = booted.find((c) => c.id.startsWith('golden-') && c.format === 'cloud-config') ?? booted[0]!;
          const network = { version: 2, ethernets: { nic0: { match: { macaddress: '52:54:00:27:00:01' }, addresses: ['192.0.2.27/24'] } } };
          try {
            const res = await post(againBase, 'machines', 'Machine', 'm-rollback-network', { ...(donor.machine as object), selectors: { mac: ['52:54:00:27:00:01'] }, network });
            assert.equal(res.status, 201, await res.text());
          } finally {
            await stop(again);
          }
          const refused = startProcess(serviceEnv(st), [path.join(dir!, 'dist/cli.js'), 'serve']);
          // It never listens: its port is never known.
          refused.port.catch(() => undefined);
          const code = await refused.exited;
          assert.notEqual(code, 0, refused.logs());
          assert.match(refused.logs(), /needs releases with schema 7 or later/);
          const cleanup = startProcess(serviceEnv(st));
          const cleanupBase = `http://127.0.0.1:${await cleanup.port}`;
          try {
            const res = await fetch(`${cleanupBase}/v1/machines/m-rollback-network`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } });
            assert.ok(res.status === 200 || res.status === 204, await res.text());
          } finally {
            await stop(cleanup);
          }
        }

        // Rollback: the earlier release starts on the store this tree migrated and boots
        // every machine it booted before (what it does not know it ignores).
        const back = startProcess(serviceEnv(st), [path.join(dir!, 'dist/cli.js'), 'serve']);
        const backBase = `http://127.0.0.1:${await back.port}`;
        try {
          const refused: string[] = [];
          for (const c of booted) {
            const b = await boot(backBase, c);
            if (!b.ok) refused.push(`m-${c.id}: ${b.why}`);
          }
          assert.deepEqual(refused, [], `after a rollback to ${release.name}`);
        } finally {
          await stop(back);
        }
      });
    }
  });
}

if (sourcesProblem !== undefined) {
  const why = missingDependency(`upgrades from earlier releases: ${sourcesProblem}`);
  it('upgrades from earlier releases', { skip: why }, () => {
    assert.fail(sourcesProblem);
  });
}
