import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { Kube } from '../../src/controller/kube.js';
import { startController } from '../../src/controller/run.js';
import { freePort, startControlPlane } from '../support/controlplane.js';
import { CapiFixtures, get, installCapiCrds } from '../support/management.js';
import { referenceTool } from '../support/tools.js';

it('spike', { timeout: 300_000 }, async () => {
  const [mgmt, workload] = await Promise.all([startControlPlane(), startControlPlane()]);
  await installCapiCrds(mgmt);
  const dir = mkdtempSync(path.join(tmpdir(), 'cabpk-'));
  writeFileSync(path.join(dir, 'kubeconfig'), mgmt.kubeconfig);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(dir, 'tls.key'), '-out', path.join(dir, 'tls.crt'), '-subj', '/CN=localhost', '-days', '1'], { stdio: 'ignore' });
  const [h, d, w] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(referenceTool('kubeadm-bootstrap-manager')!, ['--watch-filter=kubeadm', `--health-addr=127.0.0.1:${h}`, `--diagnostics-address=127.0.0.1:${d}`, '--insecure-diagnostics', `--webhook-port=${w}`, `--webhook-cert-dir=${dir}`, '--bootstrap-token-ttl=30s'], { env: { ...process.env, KUBECONFIG: path.join(dir, 'kubeconfig') }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = ''; child.stdout.on('data', (b) => (out += b)); child.stderr.on('data', (b) => (out += b));
  const bw = await startController(Kube.fromKubeconfig(mgmt.kubeconfig), { tokenTtlMs: 30_000, ignitionVersion: '2.3', concurrency: 4, identity: 'bw', health: { host: '127.0.0.1', port: 0 }, watchFilter: 'bootwright' }, pino({ level: 'warn' }));
  const fx = new CapiFixtures(mgmt, workload);
  for (const [c, f] of [['legacy', 'kubeadm'], ['moved', 'bootwright']] as const) {
    await fx.cluster(c, {}, { 'cluster.x-k8s.io/watch-filter': f });
    await fx.clusterStatus(c, { initialization: { infrastructureProvisioned: true } });
    await fx.machine(c, `${c}-cp-a`, 'control-plane', undefined, {}, { 'cluster.x-k8s.io/watch-filter': f });
    await fx.machine(c, `${c}-md-0-a`, 'worker', undefined, {}, { 'cluster.x-k8s.io/watch-filter': f });
  }
  const wait = async (n: string) => { for (let i = 0; i < 180; i++) { const s = await get(mgmt, 'v1', 'secrets', 'default', n); if (s) return Buffer.from((s as any).data.value, 'base64').toString(); await sleep(500); } throw new Error('no ' + n + out.slice(-3000)); };
  writeFileSync('/tmp/bw/cabpk-init.yaml', await wait('legacy-cp-a'));
  writeFileSync('/tmp/bw/bw-init.yaml', await wait('moved-cp-a'));
  for (const c of ['legacy', 'moved']) await fx.clusterStatus(c, { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
  writeFileSync('/tmp/bw/cabpk-worker.yaml', await wait('legacy-md-0-a'));
  writeFileSync('/tmp/bw/bw-worker.yaml', await wait('moved-md-0-a'));
  for (const n of ['legacy-md-0-a', 'moved-md-0-a']) writeFileSync(`/tmp/bw/${n}.config.json`, JSON.stringify(await get(mgmt, 'bootstrap.cluster.x-k8s.io/v1beta2', 'kubeadmconfigs', 'default', n), null, 1));
  const toks = await workload.request('GET', '/api/v1/namespaces/kube-system/secrets');
  writeFileSync('/tmp/bw/tokens.json', JSON.stringify(toks.body, null, 1));
  child.kill('SIGTERM');
  await bw.stop();
  await Promise.all([mgmt.stop(), workload.stop()]);
});
