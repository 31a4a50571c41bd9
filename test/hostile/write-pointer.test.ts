/**
 * Pointer configs always work (issue 11 C): the target of a pointer config is never
 * refused by the platform limit of the profile's `output.platform`, which is exactly the
 * case the pointer exists for. The signed `/ignition` and NoCloud `user-data` routes
 * serve the full config to a machine over HTTP, not as user data.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { clusterSpec, doc, inventory, type Inventory, machineSpec, workerProfileSpec } from '../support/inventory.js';
import { RENDERER } from '../support/server.js';

const IGN = 'application/vnd.coreos.ignition+json';
// Incompressible: over EC2's 16,384 bytes even gzip-compressed.
const BIG = randomBytes(24 * 1024).toString('base64');
let inv: Inventory;

before(async () => {
  // One public URL: every supertest request gets its own ephemeral port, and the report
  // URL the data carries is built from the public URL, else from the fetch's Host.
  // The pointers of one second name one URL (the version is not signed), fetched here
  // once per version: first fetch wins is off (test/api/binding.test.ts tests it).
  inv = await inventory({ publicUrl: 'http://boot.example.test:8080', firstFetchWins: false });
  assert.equal((await inv.send('post', '/v1/clusters', doc('Cluster', 'prod', clusterSpec()))).status, 201);
  const files = [{ path: '/etc/big', content: BIG }];
  const ign = workerProfileSpec({ provisioning: { files }, output: { format: 'ignition', platform: 'aws' } });
  const cc = workerProfileSpec({ provisioning: { files }, output: { format: 'cloud-config', platform: 'aws' } });
  assert.equal((await inv.send('post', '/v1/profiles', doc('Profile', 'worker', ign))).status, 201);
  assert.equal((await inv.send('post', '/v1/profiles', doc('Profile', 'worker-cc', cc))).status, 201);
  assert.equal((await inv.send('post', '/v1/machines', doc('Machine', 'big-ign', machineSpec('aa:bb:cc:00:00:01')))).status, 201);
  assert.equal((await inv.send('post', '/v1/machines', doc('Machine', 'big-cc', machineSpec('aa:bb:cc:00:00:02', { profile: 'worker-cc' })))).status, 201);
});
after(() => inv.close());

describe('a pointer config whose target is over the profile platform limit', () => {
  it('the bootstrap data itself is still refused for aws (422 naming spec.output.platform)', async () => {
    const res = await inv.get('/v1/machines/big-ign/bootstrap', { accept: `${IGN};version=3.4.0` }, RENDERER);
    assert.equal(res.status, 422, res.text);
    assert.deepEqual((res.body.errors as { path: string }[]).map((e) => e.path), ['spec.output.platform']);
  });

  it('Ignition: /ignition serves the full config, and its sha512 is the pointer hash', async () => {
    for (const version of ['3.0.0', '3.4.0', '2.3.0']) {
      const pointer = await inv.get('/v1/machines/big-ign/bootstrap?pointer=true', { accept: `${IGN};version=${version}` }, RENDERER);
      assert.equal(pointer.status, 200, pointer.text);
      assert.ok(pointer.text.length < 16384);
      const replace = JSON.parse(pointer.text).ignition.config.replace as { source: string; verification: { hash: string } };
      const full = await inv.get(replace.source, { accept: `${IGN};version=3.6.0, */*;q=0.1` }, '');
      assert.equal(full.status, 200, full.text);
      assert.ok(Buffer.byteLength(full.text) > 16384);
      assert.equal(JSON.parse(full.text).ignition.version, version);
      assert.equal(replace.verification.hash, `sha512-${createHash('sha512').update(full.text).digest('hex')}`);
    }
  });

  it('cloud-config: the NoCloud user-data the #include-once names is served whole', async () => {
    const pointer = await inv.get('/v1/machines/big-cc/bootstrap?pointer=true', {}, RENDERER);
    assert.equal(pointer.status, 200, pointer.text);
    const url = pointer.text.split('\n')[1]!;
    const user = await inv.get(url, {}, '');
    assert.equal(user.status, 200, user.text);
    assert.equal(user.headers['content-type'], 'text/cloud-config; charset=utf-8');
    assert.ok(user.text.startsWith('#cloud-config\n'));
    assert.ok(user.text.includes(BIG.slice(0, 64)));
  });
});
