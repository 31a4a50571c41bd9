/**
 * `spec.network` in both formats: the same netplan v2 document, rendered as Ignition's
 * systemd-networkd units and as cloud-init's network-config, means the same (read back
 * by test/support/network-meaning.ts, the cloud-init side by cloud-init itself), for
 * netplan's own published examples and for generated networks; the schema refuses what
 * one format would drop; the kernel arguments carry the same document.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { load } from 'js-yaml';
import { networkBootArgs } from '../../src/boot/network.js';
import { RequestError } from '../../src/errors.js';
import { renderNetworkConfig } from '../../src/provision/cloudinit/network.js';
import { planNetwork } from '../../src/provision/plan/network.js';
import { networkSchema, type NetworkInput } from '../../src/request/network.js';
import { renderNodeBootstrap } from '../../src/render.js';
import { validateNodeBootstrap, zodProblems } from '../../src/request/parse.js';
import { ignitionFiles } from '../support/decode.js';
import { missingDependency } from '../support/missing.js';
import { cloudInitMeaning, type Meaning, networkdMeaning } from '../support/network-meaning.js';
import { worker } from '../support/requests.js';
import { haveCloudInit, ignitionValidate, haveIgnitionValidate } from '../support/validators.js';

/**
 * netplan's published examples (github.com/canonical/netplan, examples/, at the commits
 * named), as a `spec.network` takes them: the content of their top-level `network:` key,
 * without `renderer: networkd` (bootwright picks the renderer by format).
 */
const NETPLAN_EXAMPLES: Record<string, unknown> = {
  // examples/static.yaml @ 6bc0d9ee88d6a5bbd04edbb2711098c701691f9d
  static: { version: 2, ethernets: { enp3s0: { addresses: ['10.10.10.2/24'], gateway4: '10.10.10.1', nameservers: { search: ['mydomain', 'otherdomain'], addresses: ['10.10.10.1', '1.1.1.1'] } } } },
  // examples/static_multiaddress.yaml @ 7844058dde8e2df4c6b45d4f08d82832d7932bab
  static_multiaddress: { version: 2, ethernets: { enp3s0: { addresses: ['10.100.1.38/24', '10.100.1.39/24'], routes: [{ to: 'default', via: '10.100.1.1' }] } } },
  // examples/bonding.yaml @ 010997015d34dd62a1212769802e3f611d16c3b7
  bonding: { version: 2, ethernets: { enp3s0: {}, enp4s0: {} }, bonds: { bond0: { dhcp4: true, interfaces: ['enp3s0', 'enp4s0'], parameters: { mode: 'active-backup', primary: 'enp3s0' } } } },
  // examples/vlan.yaml @ 7844058dde8e2df4c6b45d4f08d82832d7932bab
  vlan: {
    version: 2,
    ethernets: {
      mainif: {
        match: { macaddress: 'de:ad:be:ef:ca:fe' },
        'set-name': 'mainif',
        addresses: ['10.3.0.5/23'],
        nameservers: { addresses: ['8.8.8.8', '8.8.4.4'], search: ['example.com'] },
        routes: [{ to: 'default', via: '10.3.0.1' }],
      },
    },
    vlans: {
      vlan15: { id: 15, link: 'mainif', addresses: ['10.3.99.5/24'] },
      vlan10: { id: 10, link: 'mainif', addresses: ['10.3.98.5/24'], nameservers: { addresses: ['127.0.0.1'], search: ['domain1.example.com', 'domain2.example.com'] } },
    },
  },
};

/** The Ignition render of a worker with `network`, its networkd units by path. */
function networkdUnits(network: unknown): Map<string, string> {
  const req = worker({ output: { format: 'ignition' }, network });
  const config = JSON.parse(renderNodeBootstrap(validateNodeBootstrap(req)).body) as unknown;
  return new Map([...ignitionFiles(config)].filter(([p]) => p.startsWith('/etc/systemd/network/')).map(([p, b]) => [p, b.toString('utf8')]));
}

/** MAC-matched interfaces without `set-name` keep the kernel's name: neither side names them. */
function unnamed(meaning: Record<string, Meaning>, network: NetworkInput): Record<string, Meaning> {
  const renamed = new Set(Object.values(network.ethernets ?? {}).filter((e) => e['set-name'] !== undefined).map((e) => e.match!.macaddress.toLowerCase()));
  return Object.fromEntries(Object.entries(meaning).map(([k, m]) => [k, k.startsWith('mac:') && !renamed.has(k.slice(4)) ? { ...m, name: '' } : m]));
}

/** Both formats' meaning of `input`: ours from the networkd units, cloud-init's from the network-config it reads. */
async function bothMeanings(input: unknown): Promise<{ networkd: Record<string, Meaning>; cloudInit: Record<string, Meaning> }> {
  const network = networkSchema.parse(input);
  const networkd = unnamed(networkdMeaning(networkdUnits(input)), network);
  const cloudInit = unnamed(await cloudInitMeaning(renderNetworkConfig(planNetwork(network))), network);
  return { networkd, cloudInit };
}

const cloudInitSkip = haveCloudInit ? false : missingDependency('cloud-init is not installed: network-config is not read by cloud-init (apt-get install -y cloud-init)');

describe('spec.network', () => {
  describe('netplan examples mean the same in networkd units and in cloud-init', { skip: cloudInitSkip }, () => {
    for (const [name, input] of Object.entries(NETPLAN_EXAMPLES)) {
      it(name, async () => {
        const { networkd, cloudInit } = await bothMeanings(input);
        assert.ok(Object.keys(networkd).length > 0);
        assert.deepEqual(networkd, cloudInit);
      });
    }
  });

  it('the vlan example: the units, byte for byte', () => {
    const units = networkdUnits(NETPLAN_EXAMPLES.vlan);
    assert.deepEqual([...units.keys()], [
      '/etc/systemd/network/10-bootwright-mainif.link',
      '/etc/systemd/network/10-bootwright-mainif.network',
      '/etc/systemd/network/10-bootwright-vlan15.netdev',
      '/etc/systemd/network/10-bootwright-vlan15.network',
      '/etc/systemd/network/10-bootwright-vlan10.netdev',
      '/etc/systemd/network/10-bootwright-vlan10.network',
    ]);
    assert.equal(units.get('/etc/systemd/network/10-bootwright-mainif.link'), '[Match]\nPermanentMACAddress=de:ad:be:ef:ca:fe\n\n[Link]\nName=mainif\n');
    assert.equal(
      units.get('/etc/systemd/network/10-bootwright-mainif.network'),
      '[Match]\nPermanentMACAddress=de:ad:be:ef:ca:fe\n\n[Network]\nDHCP=no\nDNS=8.8.8.8\nDNS=8.8.4.4\nDomains=example.com\nVLAN=vlan15\nVLAN=vlan10\n\n[Address]\nAddress=10.3.0.5/23\n\n[Route]\nDestination=0.0.0.0/0\nGateway=10.3.0.1\n',
    );
    assert.equal(units.get('/etc/systemd/network/10-bootwright-vlan10.netdev'), '[NetDev]\nName=vlan10\nKind=vlan\n\n[VLAN]\nId=10\n');
  });

  it('an LACP bond: the netdev carries mode, MII interval, LACP rate and hash policy', () => {
    const units = networkdUnits({
      version: 2,
      ethernets: { eno1: { match: { macaddress: 'AA-BB-CC-DD-EE-01' }, 'set-name': 'eno1' }, eno2: { match: { macaddress: 'aa:bb:cc:dd:ee:02' }, 'set-name': 'eno2' } },
      bonds: { bond0: { interfaces: ['eno1', 'eno2'], parameters: { mode: '802.3ad', 'mii-monitor-interval': 100, 'lacp-rate': 'fast', 'transmit-hash-policy': 'layer3+4' }, dhcp4: true, mtu: 9000 } },
    });
    assert.equal(units.get('/etc/systemd/network/10-bootwright-bond0.netdev'), '[NetDev]\nName=bond0\nKind=bond\n\n[Bond]\nMode=802.3ad\nMIIMonitorSec=100ms\nLACPTransmitRate=fast\nTransmitHashPolicy=layer3+4\n');
    assert.equal(units.get('/etc/systemd/network/10-bootwright-eno1.network'), '[Match]\nPermanentMACAddress=aa:bb:cc:dd:ee:01\n\n[Network]\nDHCP=no\nBond=bond0\n');
    assert.equal(units.get('/etc/systemd/network/10-bootwright-bond0.network'), '[Match]\nName=bond0\n\n[Link]\nMTUBytes=9000\n\n[Network]\nDHCP=ipv4\n');
  });

  it('the Ignition config with a network passes ignition-validate', { skip: haveIgnitionValidate ? false : missingDependency('ignition-validate is not installed') }, async () => {
    const req = worker({ output: { format: 'ignition' }, network: NETPLAN_EXAMPLES.vlan });
    assert.deepEqual(await ignitionValidate(renderNodeBootstrap(validateNodeBootstrap(req)).body), []);
  });

  it('cloud-config: user data unchanged, with a warning that the datasource carries the network', () => {
    const plain = renderNodeBootstrap(validateNodeBootstrap(worker()));
    const withNetwork = renderNodeBootstrap(validateNodeBootstrap(worker({ network: NETPLAN_EXAMPLES.static })));
    assert.equal(withNetwork.body, plain.body);
    assert.ok(withNetwork.warnings.some((w) => w.startsWith('spec.network is not in cloud-config user data')), withNetwork.warnings.join('\n'));
  });

  it('generated networks mean the same in both formats (cloud-init reads every one)', { skip: cloudInitSkip }, async () => {
    const mac = fc.integer({ min: 1, max: 0xfffe }).map((n) => `52:54:00:00:${(n >> 8).toString(16).padStart(2, '0')}:${(n & 0xff).toString(16).padStart(2, '0')}`);
    const v4 = fc.tuple(fc.integer({ min: 1, max: 223 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 })).map(([a, b, c]) => `${a}.${b}.0.${c}`);
    const l3 = fc.record(
      {
        dhcp4: fc.boolean(),
        addresses: fc.uniqueArray(fc.tuple(v4, fc.integer({ min: 8, max: 30 })).map(([a, p]) => `${a}/${p}`), { maxLength: 2, selector: (a) => a.split('/')[0]! }),
        routes: fc.uniqueArray(fc.record({ to: fc.constantFrom('10.20.0.0/16', '192.168.50.0/24'), via: v4 }), { maxLength: 2, selector: (r) => r.to }),
        nameservers: fc.record({ addresses: fc.uniqueArray(v4, { minLength: 1, maxLength: 2 }), search: fc.uniqueArray(fc.constantFrom('example.com', 'lab.example.net'), { maxLength: 2 }) }),
        mtu: fc.constantFrom(1500, 9000),
      },
      { requiredKeys: [] },
    );
    // Routes only where the schema takes them: on an interface with an address or DHCP.
    const routable = <T extends { routes?: unknown[]; addresses?: unknown[]; dhcp4?: boolean }>(cfg: T): T =>
      (cfg.addresses?.length ?? 0) > 0 || cfg.dhcp4 === true ? cfg : { ...cfg, routes: undefined };
    const network = fc
      .record({
        ethernets: fc.uniqueArray(fc.tuple(fc.constantFrom('eno1', 'eno2', 'eno3', 'ens4'), fc.option(mac, { nil: undefined }), l3), { minLength: 1, maxLength: 3, selector: ([id]) => id }),
        vlan: fc.option(fc.tuple(fc.integer({ min: 2, max: 4094 }), l3), { nil: undefined }),
      })
      .map(({ ethernets, vlan }) => {
        const [first] = ethernets[0]!;
        const macs = new Set<string>();
        const doc: Record<string, unknown> = {
          version: 2,
          ethernets: Object.fromEntries(
            ethernets.map(([id, m, cfg]) => {
              const unique = m !== undefined && !macs.has(m) ? (macs.add(m), m) : undefined;
              return [id, { ...(unique !== undefined ? { match: { macaddress: unique }, 'set-name': id } : {}), ...routable(cfg) }];
            }),
          ),
          ...(vlan ? { vlans: { [`vlan${vlan[0]}`]: { id: vlan[0], link: first, ...routable(vlan[1]) } } } : {}),
        };
        return doc;
      });
    await fc.assert(
      fc.asyncProperty(network, async (input) => {
        const { networkd, cloudInit } = await bothMeanings(input);
        assert.deepEqual(networkd, cloudInit);
      }),
      { numRuns: 15 },
    );
  });

  describe('refused when written, naming the field', () => {
    /** The problems as a write's 422 names them. */
    const problems = (input: unknown) => {
      const r = networkSchema.safeParse(input);
      assert.equal(r.success, false, 'refused');
      return zodProblems(r.error).map((p) => `${p.path}: ${p.message}`);
    };
    it('a key neither format renders (netplan wifis, renderer)', () => {
      assert.match(problems({ version: 2, renderer: 'networkd', ethernets: {} }).join('\n'), /renderer/);
      assert.match(problems({ version: 2, wifis: { wlan0: {} } }).join('\n'), /wifis/);
    });
    it('set-name without match; match by name (cloud-init does not name by it)', () => {
      assert.deepEqual(problems({ version: 2, ethernets: { lan: { 'set-name': 'lan0' } } }), ['ethernets.lan.set-name: needs match (netplan renames only a matched device)']);
      assert.deepEqual(problems({ version: 2, ethernets: { lan: { match: { name: 'enp3s0' } } } }), ['ethernets.lan.match.macaddress: required', 'ethernets.lan.match.name: unknown field']);
    });
    it('a bond member that is not an ethernet, in two bonds; a primary not a member; lacp-rate outside 802.3ad; a VLAN on nothing', () => {
      assert.deepEqual(
        problems({
          version: 2,
          ethernets: { a: {}, b: {} },
          bonds: { bond0: { interfaces: ['a', 'x'], parameters: { mode: 'active-backup', 'lacp-rate': 'fast', primary: 'b' } }, bond1: { interfaces: ['a'] } },
          vlans: { v1: { id: 1, link: 'nope' } },
        }),
        [
          'bonds.bond0.interfaces[1]: x is not one of ethernets',
          "bonds.bond0.parameters.primary: b is not one of this bond's interfaces",
          'bonds.bond0.parameters.lacp-rate: applies to mode 802.3ad only',
          'bonds.bond1.interfaces[0]: a is already in bond bond0',
          'vlans.v1.link: nope is not one of ethernets or bonds',
        ],
      );
    });
    it('bad addresses, a name too long for Linux', () => {
      assert.deepEqual(problems({ version: 2, ethernets: { eth0: { addresses: ['10.0.0.1', '10.0.0.1/33', '2001:db8::1/129'] }, averyverylongname0: {} } }), [
        'ethernets.eth0.addresses[0]: must be an address with its prefix length, such as 192.0.2.10/24 or 2001:db8::10/64',
        'ethernets.eth0.addresses[1]: must end in a prefix length from 0 to 32',
        'ethernets.eth0.addresses[2]: must end in a prefix length from 0 to 128',
        'ethernets.averyverylongname0: must be an interface name: 1 to 15 letters, digits, "-", "_" or ".", not starting with "." or "-"',
      ]);
    });
    it('a route across address families, an id used twice, routes on an interface with no address (found against cloud-init)', () => {
      assert.deepEqual(
        problems({
          version: 2,
          ethernets: { eth0: { addresses: ['10.0.0.1/24'], routes: [{ to: '2001:db8::/32', via: '10.0.0.254' }] }, eno1: { routes: [{ to: '10.20.0.0/16', via: '1.0.0.1' }] } },
          vlans: { eth0: { id: 5, link: 'eth0' } },
        }),
        [
          'vlans.eth0: the id eth0 is also one of ethernets; interface ids are unique',
          'ethernets.eth0.routes[0].via: must be of the same address family as to',
          'ethernets.eno1.routes: needs addresses, dhcp4 or dhcp6 on the same interface (cloud-init drops the routes of an interface with none)',
        ],
      );
    });
    it('through the request: a NodeBootstrap with a bad network is a 422 naming spec.network', () => {
      assert.throws(
        () => validateNodeBootstrap(worker({ network: { version: 2, ethernets: { a: { addresses: ['nope'] } } } })),
        (e: unknown) => e instanceof RequestError && e.problems.some((p) => p.path === 'spec.network.ethernets.a.addresses[0]'),
      );
    });
  });

  describe('kernel arguments', () => {
    it('cloud-config: network-config= carries the very document the NoCloud seed serves, which cloud-init reads', () => {
      const network = networkSchema.parse(NETPLAN_EXAMPLES.vlan);
      const args = networkBootArgs('cloud-config', network);
      assert.equal(args.length, 1);
      assert.ok(args[0]!.startsWith('network-config='));
      const text = Buffer.from(args[0]!.slice('network-config='.length), 'base64').toString('utf8');
      assert.equal(text, renderNetworkConfig(planNetwork(network)));
      assert.equal((load(text) as { ethernets: { mainif: { routes: { to: string }[] } } }).ethernets.mainif.routes[0]!.to, '0.0.0.0/0', 'default written as a CIDR, which cloud-init 22.4 reads');
    });
    it('Ignition: dracut ip= for each static ethernet the initramfs can name, ifname= for a renamed one, nameserver=', () => {
      assert.deepEqual(networkBootArgs('ignition', networkSchema.parse(NETPLAN_EXAMPLES.vlan)), ['ifname=mainif:de:ad:be:ef:ca:fe', 'ip=10.3.0.5::10.3.0.1:255.255.254.0::mainif:none', 'nameserver=8.8.8.8', 'nameserver=8.8.4.4']);
      assert.deepEqual(networkBootArgs('ignition', networkSchema.parse({ version: 2, ethernets: { eth0: { addresses: ['2001:db8::5/64'], routes: [{ to: 'default', via: '2001:db8::1' }], mtu: 9000 } } })), [
        'ip=[2001:db8::5]::[2001:db8::1]:64::eth0:none:9000',
      ]);
      // DHCP only, a bond, a MAC match without a name: nothing the initramfs needs from us.
      assert.deepEqual(networkBootArgs('ignition', networkSchema.parse(NETPLAN_EXAMPLES.bonding)), []);
      assert.deepEqual(networkBootArgs('ignition', networkSchema.parse({ version: 2, ethernets: { nic: { match: { macaddress: '52:54:00:00:00:01' }, addresses: ['10.0.0.2/24'] } } })), []);
    });
    it('no network, no arguments: what earlier releases served', () => {
      assert.deepEqual(networkBootArgs('cloud-config', undefined), []);
      assert.deepEqual(networkBootArgs('ignition', undefined), []);
    });
  });
});
