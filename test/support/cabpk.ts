/**
 * Cluster API's own kubeadm bootstrap provider (CABPK), the real manager built from the Go
 * module proxy (`kubeadm-bootstrap-manager`, tools/reference/cluster-api/), run against a
 * test management API server as its Deployment runs it, with the flags tests need: a
 * kubeconfig, `--watch-filter`, a short `--bootstrap-token-ttl`, health, diagnostics and
 * webhook ports on 127.0.0.1 (the webhook server needs a certificate: a throwaway
 * self-signed one; no API server calls it here), no leader election.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ControlPlane, freePort, retryOnPortClash } from './controlplane.js';
import { referenceTool } from './tools.js';

/** A running Cluster API manager. */
export interface Cabpk {
  /** Its field manager: the name every write it makes is recorded under (`managedFields[].manager`). */
  manager: string;
  /** What it logged so far (klog), for a failing test's message. */
  logs: () => string;
  /** Stop it (SIGTERM, by PID) and remove its directory. */
  stop: () => Promise<void>;
}

/**
 * Start CABPK against `mgmt` and wait until its health endpoint is ready.
 *
 * @param flags more flags (`--watch-filter=kubeadm`, `--bootstrap-token-ttl=30s`)
 * @throws when the manager is not built, or is not ready within 60 s (with its log)
 */
export function startCabpk(mgmt: ControlPlane, flags: string[]): Promise<Cabpk> {
  return startManager('kubeadm-bootstrap-manager', mgmt, flags);
}

/**
 * Start Cluster API's core manager (`cluster-api-manager`: the Cluster, Machine,
 * MachineSet, MachineDeployment and MachinePool controllers) against `mgmt`, the same way.
 */
export function startCoreManager(mgmt: ControlPlane, flags: string[]): Promise<Cabpk> {
  return startManager('cluster-api-manager', mgmt, flags);
}

/** A Cluster API manager binary, as its Deployment runs it but on loopback ports; its field manager is the binary's name. */
function startManager(name: 'kubeadm-bootstrap-manager' | 'cluster-api-manager', mgmt: ControlPlane, flags: string[]): Promise<Cabpk> {
  const binary = referenceTool(name);
  if (!binary) return Promise.reject(new Error(`${name} is not built (scripts/tools.sh ${name})`));
  return retryOnPortClash(() => startManagerOnce(name, binary, mgmt, flags));
}

async function startManagerOnce(name: 'kubeadm-bootstrap-manager' | 'cluster-api-manager', binary: string, mgmt: ControlPlane, flags: string[]): Promise<Cabpk> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bw-cabpk-'));
  writeFileSync(path.join(dir, 'kubeconfig'), mgmt.kubeconfig, { mode: 0o600 });
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(dir, 'tls.key'), '-out', path.join(dir, 'tls.crt'), '-subj', '/CN=localhost', '-days', '1'], { stdio: 'ignore' });
  const [health, diagnostics, webhook] = [await freePort(), await freePort(), await freePort()];
  const child: ChildProcess = spawn(
    binary,
    [`--health-addr=127.0.0.1:${String(health)}`, `--diagnostics-address=127.0.0.1:${String(diagnostics)}`, '--insecure-diagnostics', `--webhook-port=${String(webhook)}`, `--webhook-cert-dir=${dir}`, ...flags],
    { env: { ...process.env, KUBECONFIG: path.join(dir, 'kubeconfig') }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout!.on('data', (b: Buffer) => (log += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (log += b.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${String(health)}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not become ready:\n${log.slice(-4000)}`);
    }
    await sleep(200);
  }
  return { manager: name, logs: () => log, stop };
}
