/**
 * A test control plane: the pinned etcd and kube-apiserver (tools/reference/; test/
 * support/tools.ts) started as controller-runtime's envtest starts them
 * (`pkg/internal/testing/controlplane/{etcd,apiserver}.go`), on loopback ports of their
 * own, for tests that need a real API server (the Cluster API provider, per-machine
 * bootstrap tokens). No kubelet, no controller-manager: objects are created by the test.
 *
 * - etcd: `--data-dir`, `--listen-client-urls`, `--advertise-client-urls`,
 *   `--listen-peer-urls`, `--unsafe-no-fsync` (a test's data need not survive a crash);
 * - kube-apiserver: `--etcd-servers`, `--cert-dir` (it makes its own serving
 *   certificate), `--secure-port`, `--bind-address`, `--service-cluster-ip-range`,
 *   `--allow-privileged`, `--disable-admission-plugins=ServiceAccount`,
 *   `--authorization-mode=RBAC`, `--service-account-issuer`, `--service-account-key-file`,
 *   `--service-account-signing-key-file`, `--client-ca-file`; the admin is a client
 *   certificate in `system:masters`, signed by a CA made here.
 */
import 'reflect-metadata';
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, webcrypto } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as x509 from '@peculiar/x509';
import { Agent, fetch as undiciFetch, type RequestInit } from 'undici';
import { dumpYaml } from '../../src/yaml/dump.js';
import { referenceTool } from './tools.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** A running control plane. */
export interface ControlPlane {
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** PEM: the API server's serving certificate (self-signed by kube-apiserver), to trust. */
  serverCa: string;
  /** PEM: the admin's client certificate (`system:masters`) and its key. */
  adminCert: string;
  adminKey: string;
  /** A kubeconfig for the admin (embedded certificates), as Cluster API's `<cluster>-kubeconfig` Secret holds one. */
  kubeconfig: string;
  /** A request as the admin: JSON in and out. */
  request: (method: string, apiPath: string, body?: unknown, contentType?: string) => Promise<{ status: number; body: unknown }>;
  /** What each process printed so far, for a failing test's message. */
  logs: () => string;
  /** Stop both processes and remove their directories. */
  stop: () => Promise<void>;
}

/** A free loopback TCP port (the kernel's choice; released before it is used, as envtest does). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A CA and one client certificate it signs (ECDSA P-256, one day). */
async function clientCertificates(cn: string, org: string): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 24 * 3600_000);
  const caKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=bootwright test client CA',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: `CN=${cn}, O=${org}`,
    issuer: ca.subject,
    notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ALG,
    extensions: [new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true), new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  return { caPem: ca.toString('pem'), certPem: cert.toString('pem'), keyPem };
}

interface Started {
  child: ChildProcess;
  output: string[];
}

function start(command: string, args: string[]): Started {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 400) output.splice(0, output.length - 400);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  return { child, output };
}

async function stopProcess(p: Started): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Run `attempt` again, up to `attempts` times in all, while it fails because a port chosen by
 * {@link freePort} was taken by another process before the child bound it ("address already in
 * use" in the error, as Go's net package words it). envtest has the same race and the same cure.
 *
 * @throws the last attempt's error, or at once any other error
 */
export async function retryOnPortClash<T>(attempt: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (e) {
      if (i >= attempts || !(e instanceof Error) || !e.message.includes('address already in use')) throw e;
    }
  }
}

/**
 * Start etcd and kube-apiserver, and wait until the API server's `/readyz` answers. A port
 * taken between its choice and its use is chosen again ({@link retryOnPortClash}).
 *
 * @param timeoutMs how long the two may take to be ready (default two minutes)
 * @param choosePort where each attempt's three ports come from (default {@link freePort};
 *   a test hands out a taken one)
 * @throws Error naming a missing tool (`npm run tools`), or with both processes' output
 *   when they are not ready in time; both processes are stopped first
 */
export function startControlPlane(timeoutMs = 120_000, choosePort: () => Promise<number> = freePort): Promise<ControlPlane> {
  const etcdBin = referenceTool('etcd');
  const apiserverBin = referenceTool('kube-apiserver');
  if (!etcdBin || !apiserverBin) return Promise.reject(new Error('etcd and kube-apiserver are not built: npm run tools'));
  return retryOnPortClash(() => startOnce(etcdBin, apiserverBin, timeoutMs, choosePort));
}

async function startOnce(etcdBin: string, apiserverBin: string, timeoutMs: number, choosePort: () => Promise<number>): Promise<ControlPlane> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bootwright-controlplane-'));
  const [clientPort, peerPort, securePort] = [await choosePort(), await choosePort(), await choosePort()];
  const etcdUrl = `http://127.0.0.1:${clientPort}`;
  const etcd = start(etcdBin, [
    `--data-dir=${path.join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
    '--unsafe-no-fsync=true',
  ]);
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(path.join(dir, 'sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(path.join(dir, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));
  const admin = await clientCertificates('bootwright-test-admin', 'system:masters');
  writeFileSync(path.join(dir, 'client-ca.crt'), admin.caPem);
  const certDir = path.join(dir, 'certs');
  const apiserver = start(apiserverBin, [
    `--etcd-servers=${etcdUrl}`,
    `--cert-dir=${certDir}`,
    `--secure-port=${securePort}`,
    '--bind-address=127.0.0.1',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    '--disable-admission-plugins=ServiceAccount',
    '--authorization-mode=RBAC',
    // kubeadm's join authenticates with a bootstrap token (src/boot/tokens.ts, the controller's tokens).
    '--enable-bootstrap-token-auth=true',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
    `--client-ca-file=${path.join(dir, 'client-ca.crt')}`,
  ]);
  const url = `https://127.0.0.1:${securePort}`;
  const logs = () => `--- etcd:\n${etcd.output.join('').slice(-4000)}\n--- kube-apiserver:\n${apiserver.output.join('').slice(-8000)}`;
  const stop = async () => {
    await stopProcess(apiserver);
    await stopProcess(etcd);
    rmSync(dir, { recursive: true, force: true });
  };
  // The serving certificate kube-apiserver makes itself in --cert-dir, once it listens.
  let serverCa: string | undefined;
  let agent: Agent | undefined;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (apiserver.child.exitCode !== null || etcd.child.exitCode !== null) break;
    try {
      serverCa ??= readFileSync(path.join(certDir, 'apiserver.crt'), 'utf8');
      agent ??= new Agent({ connect: { ca: serverCa, cert: admin.certPem, key: admin.keyPem } });
      const res = await undiciFetch(`${url}/readyz`, { dispatcher: agent });
      if (res.status === 200) break;
      await res.arrayBuffer();
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  if (!serverCa || !agent || (await undiciFetch(`${url}/readyz`, { dispatcher: agent }).then((r) => r.status, () => 0)) !== 200) {
    const why = logs();
    await stop();
    throw new Error(`the test control plane was not ready within ${String(timeoutMs)} ms\n${why}`);
  }
  const dispatcher = agent;
  const request: ControlPlane['request'] = async (method, apiPath, body, contentType = 'application/json') => {
    const init: RequestInit = { method, dispatcher, headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': contentType } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) };
    const res = await undiciFetch(`${url}${apiPath}`, init);
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const kubeconfig = dumpYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server: url, 'certificate-authority-data': b64(serverCa) } }],
    users: [{ name: 'admin', user: { 'client-certificate-data': b64(admin.certPem), 'client-key-data': b64(admin.keyPem) } }],
    contexts: [{ name: 'admin@test', context: { cluster: 'test', user: 'admin' } }],
    'current-context': 'admin@test',
  });
  return { url, serverCa, adminCert: admin.certPem, adminKey: admin.keyPem, kubeconfig, request, logs, stop };
}
