/**
 * `bootwright upgrade check` (issue 27), on the model of `kubeadm upgrade plan`: before
 * this release takes a store over, read the store as it is (read-only: nothing is
 * migrated or written; src/compat/snapshot.ts) and say, for every stored machine, what
 * this release would do with it (src/compat/check.ts): `ok`, `changed` (a change in
 * meaning since the renderer that last served it), `warn` (it boots, but a rule that
 * came in after it was stored refuses it on the next write) or `fail` (refused). Exits 1
 * when any machine would fail.
 */
import { join } from 'node:path';
import { checkMachine, type MachineCheck, VERDICTS } from '../compat/check.js';
import { readPostgresSnapshot, readSqliteSnapshot, type StoreSnapshot } from '../compat/snapshot.js';
import { documentLimits } from '../config.js';
import { RULES_VERSION } from '../rules.js';
import { newestMigration, READABLE_FROM } from '../store/compat.js';
import { MIGRATIONS_DIR as POSTGRES_MIGRATIONS } from '../store/postgres.js';
import { MIGRATIONS_DIR as SQLITE_MIGRATIONS, SQLITE_FILE } from '../store/sqlite.js';
import { PACKAGE_VERSION, RENDERER_VERSION } from '../version.js';
import { EXIT, type Command, type Parsed, UsageError } from './commands.js';
import { outputOf } from './inventory/get.js';
import { printable, table } from './inventory/kinds.js';
import { configFrom } from './serve.js';

/** `bootwright upgrade`. */
export const UPGRADE: Command = {
  name: 'upgrade',
  summary: 'Check what this release would do with a store an earlier release wrote, before taking it over',
  usage: ['upgrade check [--data-dir DIR | BOOTWRIGHT_DATABASE_URL] [--config FILE] [-o table|json]'],
  positionals: 1,
  flags: [
    { name: 'data-dir', type: 'string', value: 'DIR', help: 'the data directory whose SQLite inventory to read (BOOTWRIGHT_DATA_DIR; default ./data)' },
    { name: 'config', type: 'string', value: 'FILE', help: "the service's configuration file (BOOTWRIGHT_CONFIG); BOOTWRIGHT_DATABASE_URL selects PostgreSQL" },
    { name: 'output', short: 'o', type: 'string', value: 'FORMAT', help: 'table | json (default table)' },
  ],
  details: `Run the new release's check against the store the running release uses (a copy of
the data directory, or the PostgreSQL database itself: it is read in one read-only
transaction). Nothing is migrated or written. Each machine is rendered as its next boot
would be, and listed as:
  ok        it boots as before
  changed   it boots; what it gets differs in meaning from its last boot (listed)
  warn      it boots as stored, but a rule of this release refuses its cluster or profile
            on the next write (the rule and field are listed; fix them before that write)
  fail      this release refuses it at boot (the field is listed)
Exit 1 when any machine would fail; 0 otherwise.`,
};

/** The whole report, as `-o json` prints it. */
export interface UpgradeReport {
  release: { version: string; rendererVersion: string; rulesVersion: number; schemaVersion: number };
  store: { kind: 'sqlite' | 'postgresql'; schemaVersion: number };
  machines: MachineCheck[];
  summary: Record<(typeof VERDICTS)[number], number>;
  /** What happens if the release before is started again after this one migrated the store. */
  rollback: string;
}

/** Check every machine of a snapshot. */
export function upgradeReport(snap: StoreSnapshot, kind: 'sqlite' | 'postgresql', limits: Parameters<typeof checkMachine>[1], boot?: Parameters<typeof checkMachine>[3]): UpgradeReport {
  const schemaVersion = newestMigration(kind === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS);
  const machines = snap.machines.map((machine): MachineCheck => {
    const cluster = snap.clusters.get(machine.spec.cluster);
    const profile = snap.profiles.get(machine.spec.profile);
    if (!cluster || !profile) {
      const missing = !cluster ? { path: 'spec.cluster', message: `names cluster "${machine.spec.cluster}", which does not exist` } : { path: 'spec.profile', message: `names profile "${machine.spec.profile}", which does not exist` };
      return { machine: machine.name, cluster: machine.spec.cluster, profile: machine.spec.profile, format: 'cloud-config', result: 'fail', problems: [missing], changes: [] };
    }
    return checkMachine({ machine, cluster, profile }, limits, snap.served.get(machine.name) ?? {}, boot);
  });
  const summary = Object.fromEntries(VERDICTS.map((v) => [v, machines.filter((m) => m.result === v).length])) as UpgradeReport['summary'];
  return {
    release: { version: PACKAGE_VERSION, rendererVersion: RENDERER_VERSION, rulesVersion: RULES_VERSION, schemaVersion },
    store: { kind, schemaVersion: snap.schemaVersion },
    machines,
    summary,
    rollback:
      snap.schemaVersion > schemaVersion
        ? `the store is at schema ${snap.schemaVersion}, newer than this release's ${schemaVersion}: it was already migrated by a newer release`
        : `after this release migrates the store (schema ${snap.schemaVersion} to ${schemaVersion}), releases with schema ${READABLE_FROM} or later (v0.1.0 on) still start on it: ` +
          'they serve what they can render and ignore what they lack (rules versions, boot reports, statuses); while a stored document uses a field a release would misread (src/store/compat.ts NEWER_FIELDS, listed in resource_needs), ' +
          'releases from v0.2.0 refuse to start, naming the schema they need, and v0.1.0, which predates that check, must not be started before those fields are removed',
  };
}

/** The table and details `upgrade check` prints. */
function printReport(r: UpgradeReport, where: string, out: NodeJS.WritableStream): void {
  const pending = r.release.schemaVersion - r.store.schemaVersion;
  out.write(`[upgrade/check] bootwright ${r.release.version} (renderer ${r.release.rendererVersion}, rules ${r.release.rulesVersion}) against ${where}\n`);
  out.write(`[upgrade/check] store schema version ${r.store.schemaVersion}; this release's is ${r.release.schemaVersion}${pending > 0 ? ` (${pending} migration${pending === 1 ? '' : 's'} to apply at its start)` : ''}\n\n`);
  if (r.machines.length === 0) out.write('No machines found.\n');
  else {
    const first = (m: MachineCheck) => (m.problems[0] ? `${m.problems[0].path}: ${m.problems[0].message}` : (m.changes[0] ?? ''));
    const more = (m: MachineCheck) => m.problems.length + m.changes.length - 1;
    out.write(table(['MACHINE', 'CLUSTER', 'PROFILE', 'FORMAT', 'RESULT', 'DETAILS'], r.machines.map((m) => [m.machine, m.cluster, m.profile, m.format, m.result, `${first(m)}${more(m) > 0 ? ` (+${more(m)} more)` : ''}`])));
    const noted = r.machines.filter((m) => m.result !== 'ok');
    if (noted.length > 0) {
      out.write('\nDetails:\n');
      for (const m of noted) {
        out.write(`  ${printable(m.machine)} (${m.result}):\n`);
        for (const p of m.problems) out.write(`    ${printable(p.path)}: ${printable(p.message)}${'rule' in p && p.rule ? ` [rule ${p.rule}, rules version ${String((p as { since?: number }).since ?? '?')}]` : ''}\n`);
        for (const c of m.changes) out.write(`    ${printable(c)}\n`);
      }
    }
  }
  const s = r.summary;
  out.write(`\n${r.machines.length} machines: ${s.ok} ok, ${s.changed} changed, ${s.warn} warn, ${s.fail} fail.\n`);
  out.write(`Rollback: ${r.rollback}.\n`);
  if (s.fail > 0) out.write(`\n[upgrade/check] FAILED: ${s.fail} machine${s.fail === 1 ? '' : 's'} would not boot with this release; fix them (the fields are named above) with the running release, then check again.\n`);
}

/** Run `upgrade check`. @returns 0, or 1 when a machine would fail; @throws UsageError, ConfigError */
export async function runUpgrade(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const sub = parsed.positionals[0];
  if (sub !== 'check') throw new UsageError(sub === undefined ? 'a subcommand is required: upgrade check' : `unknown subcommand "${sub}": upgrade check`, 'upgrade');
  const output = outputOf(parsed, 'upgrade', ['table', 'json']);
  const config = configFrom(parsed);
  const limits = documentLimits(config);
  // The script's signed URL: its length is what matters (a key of the same length, the
  // configured lifetime), with the public URL machines use, else the listen address.
  const boot = { baseUrl: config.publicUrl ?? `http://${config.host}:${config.port}`, signingKey: Buffer.alloc(32), signedUrlSeconds: config.signedUrlSeconds };
  let report: UpgradeReport;
  let where: string;
  if (config.databaseUrl) {
    where = 'PostgreSQL (BOOTWRIGHT_DATABASE_URL)';
    report = upgradeReport(await readPostgresSnapshot(config.databaseUrl), 'postgresql', limits, boot);
  } else {
    const file = join(config.dataDir, SQLITE_FILE);
    where = file;
    let snap: StoreSnapshot;
    try {
      snap = readSqliteSnapshot(file);
    } catch (e) {
      throw new UsageError(`cannot read the store at ${file}: ${(e as Error).message} (--data-dir names the data directory)`, 'upgrade');
    }
    report = upgradeReport(snap, 'sqlite', limits, boot);
  }
  if (output === 'json') out.write(`${JSON.stringify(report, null, 2)}\n`);
  else printReport(report, where, out);
  return report.summary.fail > 0 ? EXIT.failure : EXIT.ok;
}
