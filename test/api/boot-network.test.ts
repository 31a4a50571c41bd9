/**
 * A machine's network, kernel arguments and boot variables through the firmware routes
 * (issue 31): `/ipxe` carries `network-config=` (cloud-config) or dracut's `ip=`
 * (Ignition) for the machine's network, its own or its profile's; the NoCloud seed's
 * `network-config` is the same document; the Ignition config carries the networkd units;
 * `${publicUrl}`, `${machine}` and the machine's `spec.variables` fill in the profile's
 * boot section, the machine's `kernelArgs` follow the profile's; what could never boot is
 * refused when written, naming the field.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import request from 'supertest';
import { openSqliteStore, SQLITE_FILE, type SqliteStore } from '../../src/store/sqlite.js';
import { ignitionFiles } from '../support/decode.js';
import { example } from '../support/requests.js';
import { ADMIN, testService, type TestService } from '../support/server.js';

const API = 'bootwright.dev/v1alpha1';
const dir = mkdtempSync(join(tmpdir(), 'bootwright-boot-network-'));
let store: SqliteStore;
let svc: TestService;

const CLUSTER = (example('init').spec as { cluster: Record<string, unknown> }).cluster;
/** A rack's static network (netplan's examples/static.yaml shape), the profile's default. */
const RACK_NETWORK = { version: 2, ethernets: { eth0: { addresses: ['10.10.10.2/24'], gateway4: '10.10.10.1', nameservers: { addresses: ['10.10.10.1'] } } } };
/** One machine's own: a renamed NIC, matched by MAC. */
const OWN_NETWORK = { version: 2, ethernets: { lan: { match: { macaddress: '52:54:00:ab:ee:01' }, 'set-name': 'lan0', addresses: ['192.0.2.21/24'], routes: [{ to: 'default', via: '192.0.2.1' }] } } };
const BOOT = {
  kernel: '${publicUrl}/assets/vmlinuz',
  initrd: ['${publicUrl}/assets/initrd.img'],
  args: ['console=ttyS0', 'site.rack=${rack}', 'site.host=${machine}'],
};

const http = () => request(svc.app.server);
const write = (kind: string, collection: string, name: string, spec: unknown) =>
  http()
    .post(`/v1/${collection}`)
    .set('authorization', `Bearer ${ADMIN}`)
    .set('content-type', 'application/json')
    .send(JSON.stringify({ apiVersion: API, kind, metadata: { name }, spec }));
const create = async (kind: string, collection: string, name: string, spec: unknown) => {
  const res = await write(kind, collection, name, spec);
  assert.equal(res.status, 201, res.text);
};
const refused = async (kind: string, collection: string, name: string, spec: unknown) => {
  const res = await write(kind, collection, name, spec);
  assert.equal(res.status, 422, res.text);
  return (JSON.parse(res.text) as { errors: { path: string; message: string }[] }).errors;
};
/** The kernel line's arguments of a machine's /ipxe script, and its kernel URL. */
const kernelLine = async (mac: string) => {
  const res = await http().get(`/ipxe?mac=${mac}`);
  assert.equal(res.status, 200, res.text);
  const line = res.text.split('\n').find((l) => l.startsWith('kernel '));
  assert.ok(line, res.text);
  const [, kernel, ...args] = line.replace(/ \|\| goto \S+$/, '').split(' ');
  return { kernel: kernel!, args, script: res.text };
};
const argValue = (args: string[], key: string) => args.find((a) => a.startsWith(`${key}=`))?.slice(key.length + 1);

before(async () => {
  store = await openSqliteStore(join(dir, SQLITE_FILE));
  svc = await testService({ dataDir: dir, firstFetchWins: false }, { store });
  await create('Cluster', 'clusters', 'prod', { ...CLUSTER, name: 'prod' });
  const profile = { role: 'worker', kubernetesVersion: 'v1.33.2', boot: BOOT, network: RACK_NETWORK };
  // A profile may name a variable no machine gives yet: each machine's write is checked.
  await create('Profile', 'profiles', 'cc', profile);
  await create('Profile', 'profiles', 'ign', { ...profile, output: { format: 'ignition' } });
  await create('Machine', 'machines', 'n1', { selectors: { mac: ['52:54:00:ab:ee:01'] }, cluster: 'prod', profile: 'cc', network: OWN_NETWORK, kernelArgs: ['console=ttyS1,115200'], variables: { rack: 'r7' } });
  await create('Machine', 'machines', 'n2', { selectors: { mac: ['52:54:00:ab:ee:02'] }, cluster: 'prod', profile: 'cc', variables: { rack: 'r8' } });
  await create('Machine', 'machines', 'n3', { selectors: { mac: ['52:54:00:ab:ee:03'] }, cluster: 'prod', profile: 'ign', variables: { rack: 'r9' } });
});
after(async () => {
  await svc.app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a machine network, kernel arguments and boot variables', () => {
  it('cloud-config: network-config= on the kernel line is the machine\'s own network, and the NoCloud seed serves the same document', async () => {
    const { args } = await kernelLine('52:54:00:ab:ee:01');
    const text = Buffer.from(argValue(args, 'network-config')!, 'base64').toString('utf8');
    assert.deepEqual(load(text), {
      version: 2,
      ethernets: { lan: { match: { macaddress: '52:54:00:ab:ee:01' }, 'set-name': 'lan0', addresses: ['192.0.2.21/24'], routes: [{ to: '0.0.0.0/0', via: '192.0.2.1' }] } },
    });
    const seed = /ds=nocloud-net;s=(\S+)/.exec(args.join(' '))![1]!;
    const u = new URL(`${seed}network-config`);
    const served = await http().get(u.pathname).set('host', u.host);
    assert.equal(served.status, 200, served.text);
    assert.equal(served.text, text);
  });

  it('a machine without a network of its own gets its profile\'s, gateway4 written as a default route', async () => {
    const { args } = await kernelLine('52:54:00:ab:ee:02');
    assert.deepEqual(load(Buffer.from(argValue(args, 'network-config')!, 'base64').toString('utf8')), {
      version: 2,
      ethernets: { eth0: { addresses: ['10.10.10.2/24'], routes: [{ to: '0.0.0.0/0', via: '10.10.10.1' }], nameservers: { addresses: ['10.10.10.1'] } } },
    });
  });

  it('${publicUrl}, ${machine} and spec.variables fill the boot section; kernelArgs follow the profile\'s arguments, before bootwright\'s', async () => {
    const { kernel, args } = await kernelLine('52:54:00:ab:ee:01');
    const seed = new URL(/ds=nocloud-net;s=(\S+)/.exec(args.join(' '))![1]!);
    assert.equal(kernel, `${seed.origin}/assets/vmlinuz`);
    assert.deepEqual(args.slice(0, 5), ['initrd=initrd0', 'console=ttyS0', 'site.rack=r7', 'site.host=n1', 'console=ttyS1,115200']);
    assert.ok(args[5]!.startsWith('ds=nocloud-net;s='), args.join(' '));
    const { script } = await kernelLine('52:54:00:ab:ee:02');
    assert.match(script, /^initrd --name initrd0 http:\/\/\S+\/assets\/initrd\.img \|\| goto bootwright_failed$/m);
    assert.match(script, / site\.rack=r8 site\.host=n2 /);
  });

  it('Ignition: dracut ip= and nameserver= on the kernel line, the networkd units in the config', async () => {
    const { args } = await kernelLine('52:54:00:ab:ee:03');
    assert.deepEqual(args.slice(-2), ['ip=10.10.10.2::10.10.10.1:255.255.255.0::eth0:none', 'nameserver=10.10.10.1']);
    const res = await http().get('/v1/machines/n3/bootstrap').set('authorization', `Bearer ${ADMIN}`);
    assert.equal(res.status, 200, res.text);
    const files = ignitionFiles(JSON.parse(res.text));
    assert.equal(
      files.get('/etc/systemd/network/10-bootwright-eth0.network')?.toString(),
      '[Match]\nName=eth0\n\n[Network]\nDHCP=no\nDNS=10.10.10.1\n\n[Address]\nAddress=10.10.10.2/24\n\n[Route]\nDestination=0.0.0.0/0\nGateway=10.10.10.1\n',
    );
  });

  it('refused when written: a variable the profile uses and the machine lacks, a name bootwright owns, a bad network, a bad kernel argument', async () => {
    const base = { selectors: { mac: ['52:54:00:ab:ee:09'] }, cluster: 'prod', profile: 'cc' };
    assert.deepEqual(await refused('Machine', 'machines', 'bad1', base), [
      { path: 'spec.boot.args[1]', message: "uses ${rack}, which is not a bootwright variable (publicUrl, machine, or one of the machine's spec.variables); iPXE would replace it with its own setting" },
    ]);
    assert.deepEqual(
      (await refused('Machine', 'machines', 'bad2', { ...base, variables: { rack: 'r1', publicUrl: 'http://evil.example' } })).map((e) => e.path),
      ['spec.variables.publicUrl'],
    );
    assert.deepEqual(
      (await refused('Machine', 'machines', 'bad3', { ...base, variables: { rack: 'r1' }, network: { version: 2, ethernets: { eth0: { addresses: ['10.0.0.1'] } } } })).map((e) => e.path),
      ['spec.network.ethernets.eth0.addresses[0]'],
    );
    assert.deepEqual(await refused('Machine', 'machines', 'bad4', { ...base, variables: { rack: 'r 1' }, kernelArgs: ['ds=other'] }), [
      { path: 'spec.boot.args[1]', message: 'contains white space: give each kernel argument as its own list item, without spaces' },
      { path: 'spec.kernelArgs[0]', message: 'ds is set by bootwright for this machine; remove it from the machine' },
    ]);
    // A profile on its own: a malformed ${...} is refused, a well-formed name waits for machines.
    assert.deepEqual(await refused('Profile', 'profiles', 'badp', { role: 'worker', kubernetesVersion: 'v1.33.2', boot: { ...BOOT, args: ['x=${net0/mac}'] } }), [
      { path: 'spec.boot.args[0]', message: 'uses a "${...}", which is not a bootwright variable (publicUrl, machine, or one of the machine\'s spec.variables); iPXE would replace it with its own setting' },
    ]);
  });

  it('a profile change that breaks a machine\'s boot is refused naming the machine', async () => {
    const errors = await (async () => {
      const res = await http()
        .put('/v1/profiles/cc')
        .set('authorization', `Bearer ${ADMIN}`)
        .set('content-type', 'application/json')
        .send(JSON.stringify({ apiVersion: API, kind: 'Profile', metadata: { name: 'cc' }, spec: { role: 'worker', kubernetesVersion: 'v1.33.2', boot: { ...BOOT, args: [...BOOT.args, 'site.row=${row}'] } } }));
      assert.equal(res.status, 422, res.text);
      return (JSON.parse(res.text) as { errors: { path: string; message: string }[] }).errors;
    })();
    assert.equal(errors[0]?.path, 'spec.boot.args[3]');
    assert.match(errors[0].message, /^with machine "n[12]": uses \$\{row\}/);
  });
});
