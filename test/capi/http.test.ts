/** Cluster API input over HTTP and the CLI: the same bytes, and problems naming the Cluster API field. */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dump } from 'js-yaml';
import request from 'supertest';
import { capiRequest } from '../support/capi.js';
import { RENDERER, testService, type TestService } from '../support/server.js';
import { worker } from '../support/requests.js';

let svc: TestService;
before(async () => {
  svc = await testService();
});
after(async () => {
  await svc.app.close();
});

const CLI = ['--import', 'tsx', new URL('../../src/cli.ts', import.meta.url).pathname];

describe('Cluster API input over HTTP and the CLI', () => {
  it('POST /v1/render with a KubeadmConfigTemplate wrapper serves what the CLI renders', async () => {
    const yaml = dump(capiRequest('worker', 'v1beta2'));
    const res = await request(svc.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).set('content-type', 'application/yaml').set('accept', 'application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1').send(yaml);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/vnd.coreos.ignition+json; version=3.4.0');
    const dir = mkdtempSync(join(tmpdir(), 'bw-capi-'));
    writeFileSync(join(dir, 'req.yaml'), yaml);
    const cli = execFileSync(process.execPath, [...CLI, 'render', '-f', join(dir, 'req.yaml'), '--format', 'ignition', '--ignition-version', '3.4.0'], { encoding: 'utf8' });
    assert.equal(res.text, cli);
  });

  it('a Secret reference with no such Secret beside it is a 422 problem naming the reference and the Secret, in the API and the CLI', async () => {
    const body = worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 'bootstrap', key: 'x' } } }] } });
    const res = await request(svc.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).set('content-type', 'application/json').send(JSON.stringify(body));
    assert.equal(res.status, 422);
    assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.deepEqual(res.body.errors, [{ path: 'spec.kubeadmConfigSpec.files[0].contentFrom.secret.name', message: 'names Secret "bootstrap", which is not in spec.secrets: pass the Secret beside the Cluster API input' }]);
    const cli = spawnSync(process.execPath, [...CLI, 'render', '-f', '-'], { input: JSON.stringify(body), encoding: 'utf8' });
    assert.equal(cli.status, 2);
    assert.equal(cli.stdout, '');
    assert.match(cli.stderr, /^spec\.kubeadmConfigSpec\.files\[0\]\.contentFrom\.secret\.name: names Secret "bootstrap"/m);
  });

  it('with the Secret in spec.secrets, the API and the CLI serve the same bytes, the value in the file', async () => {
    const body = worker({
      kubeadmConfigSpec: { files: [{ path: '/etc/x', permissions: '0600', contentFrom: { secret: { name: 'bootstrap', key: 'x' } } }] },
      secrets: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bootstrap' }, data: { x: Buffer.from('token=s3cr3t\n').toString('base64') } }],
    });
    const res = await request(svc.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).set('content-type', 'application/json').send(JSON.stringify(body));
    assert.equal(res.status, 200);
    assert.match(res.text, /- path: \/etc\/x\n {4}owner: root:root\n {4}permissions: '0600'\n {4}content: \|\n {6}token=s3cr3t\n/);
    const cli = spawnSync(process.execPath, [...CLI, 'render', '-f', '-'], { input: JSON.stringify(body), encoding: 'utf8' });
    assert.equal(cli.status, 0, cli.stderr);
    assert.equal(cli.stdout, res.text);
  });
});
