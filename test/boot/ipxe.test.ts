import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machineIdentity, type MachineIdentity } from '../../src/boot/identity.js';
import {
  bootFormat,
  bootScript,
  echoSafe,
  kernelArgProblem,
  literalTokenProblem,
  machineScript,
  provisioningArgs,
  resolveBootUrl,
  unknownMachineScript,
} from '../../src/boot/ipxe.js';
import { bootstrapUrl } from '../../src/boot/sign.js';
import { RequestError } from '../../src/errors.js';
import { expandSettings, simulate, type SimCommand } from './ipxe-sim.js';

const BASE = 'http://10.0.2.2:8080';
const KEY = Buffer.alloc(32, 1);
const NOW = 1_700_000_000;

/** Every token of every command that looks like a URL parses with `new URL`. */
function assertUrlsParse(script: string): string[] {
  const urls = simulate(script)
    .flatMap((c) => c.argv)
    .flatMap((t) => {
      const m = /(?:^|=|;s=)((?:https?|tftp):\/\/.*)$/.exec(t);
      return m ? [m[1]!] : [];
    });
  assert.ok(urls.length > 0, 'script has URLs');
  for (const u of urls) assert.doesNotThrow(() => new URL(u), u);
  return urls;
}

/** Every command whose failure would end the script jumps to a label that exists. */
function assertGuarded(script: string, commands: readonly string[]): void {
  const cmds = simulate(script);
  const labels = new Set(cmds.flatMap((c) => (c.label !== undefined ? [c.label] : [])));
  cmds.forEach((c, i) => {
    if (!commands.includes(c.argv[0]!)) return;
    assert.equal(c.next, '||', `${c.argv[0]!} on line ${c.line} is guarded`);
    const handler = cmds[i + 1]!;
    assert.equal(handler.argv[0], 'goto');
    assert.ok(labels.has(handler.argv[1]!), `label ${handler.argv[1]!} exists`);
  });
  for (const c of cmds.filter((c) => c.argv[0] === 'goto')) assert.ok(labels.has(c.argv[1]!), `label ${c.argv[1]!} exists`);
}

function command(script: string, name: string, settings = {}): SimCommand {
  const c = simulate(script, settings).find((x) => x.argv[0] === name);
  assert.ok(c, `script has ${name}`);
  return c;
}

describe('literalTokenProblem and kernelArgProblem', () => {
  it('pass values iPXE leaves alone, a lone $ included', () => {
    for (const ok of ['console=ttyS0,115200n8', 'a=$b', 'pw=$6$salt$hash', 'x=${y', 'x=}${', 'a&&b', 'x||', '=#', 'é=ü']) {
      assert.equal(literalTokenProblem(ok), undefined, ok);
      assert.equal(kernelArgProblem(ok), undefined, ok);
      assert.equal(expandSettings(ok, { y: 'EXPANDED', b: 'EXPANDED' }), ok, `iPXE leaves ${ok} unchanged`);
    }
  });

  it('refuse values iPXE would change or split', () => {
    const cases: [string, RegExp][] = [
      ['', /empty/],
      ['a b', /white space/],
      ['a\tb', /white space/],
      ['a\nb', /white space/],
      ['a\x01b', /control/],
      ['#x', /comment/],
      ['||', /separator/],
      ['&&', /separator/],
      [';', /separator/],
      ['trailing\\', /continuation/],
      ['a=${b}', /setting/],
      ['a=${b:hex}c', /setting/],
      ['${}', /setting/],
    ];
    for (const [bad, why] of cases) assert.match(literalTokenProblem(bad) ?? '', why, JSON.stringify(bad));
    assert.match(kernelArgProblem('root="a b"') ?? '', /own list item/);
  });

  it('has no escape to offer: iPXE expands ${...} again after every expansion', () => {
    assert.equal(expandSettings('a=${b}', { b: 'x' }), 'a=x');
    assert.equal(expandSettings('${d}{b}', { d: '$', b: 'x' }), 'x');
    assert.equal(expandSettings('${a${b}}', { b: 'c', ac: 'nested' }), 'nested');
  });
});

describe('resolveBootUrl', () => {
  it('resolves relative references against the base URL taken as a directory (RFC 3986 §5.2)', () => {
    assert.equal(resolveBootUrl('assets/vmlinuz', 'http://h:8080/bw'), 'http://h:8080/bw/assets/vmlinuz');
    assert.equal(resolveBootUrl('assets/vmlinuz', 'http://h:8080/bw/'), 'http://h:8080/bw/assets/vmlinuz');
    assert.equal(resolveBootUrl('/assets/vmlinuz', 'http://h:8080/bw'), 'http://h:8080/assets/vmlinuz');
    assert.equal(resolveBootUrl('../x', 'http://h/bw'), 'http://h/x');
    assert.equal(resolveBootUrl('vmlinuz', 'http://h'), 'http://h/vmlinuz');
  });

  it('keeps absolute http, https and tftp URLs and percent-encodes what URLs cannot hold', () => {
    assert.equal(resolveBootUrl('https://mirror.example.com/fcos/kernel', BASE), 'https://mirror.example.com/fcos/kernel');
    assert.equal(resolveBootUrl('tftp://10.0.0.1/vmlinuz', BASE), 'tftp://10.0.0.1/vmlinuz');
    assert.equal(resolveBootUrl('my kernel', BASE), 'http://10.0.2.2:8080/my%20kernel');
  });

  it('refuses other schemes', () => {
    assert.throws(() => resolveBootUrl('file:///vmlinuz', BASE), /scheme file:/);
    assert.throws(() => resolveBootUrl('ftp://h/vmlinuz', BASE), /scheme ftp:/);
  });
});

describe('bootScript', () => {
  const script = bootScript(BASE);

  it('is a #!ipxe script with a guarded retry loop around dhcp and chain', () => {
    assert.ok(script.startsWith('#!ipxe\n'));
    assert.ok(script.endsWith('\n'));
    assertGuarded(script, ['dhcp', 'chain']);
    assertUrlsParse(script);
    const cmds = simulate(script);
    assert.deepEqual(
      cmds.map((c) => c.argv[0] ?? `:${c.label!}`),
      [':bootwright_retry', 'isset', 'dhcp', 'goto', 'chain', 'goto', ':bootwright_wait', 'echo', 'sleep', 'goto'],
    );
    assert.deepEqual(command(script, 'sleep').argv, ['sleep', '10']);
    assert.deepEqual(command(script, 'chain').argv.slice(0, 3), ['chain', '--replace', '--autofree']);
  });

  it('runs dhcp only when the interface iPXE booted from has no address, so netX stays the boot NIC', () => {
    const cmds = simulate(script);
    const isset = cmds.findIndex((c) => c.argv[0] === 'isset');
    assert.ok(isset >= 0);
    // The raw (unexpanded) argument is the boot interface's address; dhcp follows on failure only.
    assert.match(script, /^isset \$\{netX\/ip\} \|\| dhcp \|\| goto bootwright_wait$/m);
    assert.equal(cmds[isset]!.next, '||');
    assert.equal(cmds[isset + 1]!.argv[0], 'dhcp');
    assert.deepEqual(cmds[isset + 1]!.argv, ['dhcp'], 'no interface named: only reached when netX is unconfigured');
    assert.equal(cmds[isset]!.line, cmds[isset + 1]!.line, 'same line: dhcp is skipped when isset succeeds');
    assert.deepEqual(command(script, 'isset', { 'netX/ip': '10.0.2.15' }).argv, ['isset', '10.0.2.15']);
  });

  it('chains /ipxe with every identity setting, and iPXE expansions give back the identity', () => {
    const chain = command(bootScript(BASE), 'chain', {
      'netX/mac': Uint8Array.from([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]),
      uuid: '4c4c4544-0051-4410-8051-b3c04f4a4a32',
      serial: 'SN 42/A&B',
      hostname: 'Node-1',
      buildarch: 'x86_64',
      platform: 'efi',
    });
    const url = new URL(chain.argv[3]!);
    assert.equal(`${url.origin}${url.pathname}`, 'http://10.0.2.2:8080/ipxe');
    assert.equal(chain.argv[3], 'http://10.0.2.2:8080/ipxe?mac=52-54-00-12-34-56&uuid=4c4c4544-0051-4410-8051-b3c04f4a4a32&serial_hex=53:4e:20:34:32:2f:41:26:42&hostname_hex=4e:6f:64:65:2d:31&buildarch=x86_64&platform=efi');
    const identity = machineIdentity(url.searchParams);
    assert.deepEqual(identity, {
      mac: '52:54:00:12:34:56',
      uuid: '4c4c4544-0051-4410-8051-b3c04f4a4a32',
      serial: 'SN 42/A&B',
      hostname: 'node-1',
      buildarch: 'x86_64',
      platform: 'efi',
      labels: {},
      ignored: [],
    });
  });

  it('gives an empty (not reported) value for unset settings', () => {
    const chain = command(bootScript(BASE), 'chain', { 'netX/mac': Uint8Array.from([0x52, 0x54, 0, 0, 0, 1]) });
    const identity = machineIdentity(new URL(chain.argv[3]!).searchParams);
    assert.deepEqual(identity, { mac: '52:54:00:00:00:01', labels: {}, ignored: [] });
  });

  it('keeps a base path prefix and takes the retry pause', () => {
    const s = bootScript('https://boot.example.com/bw/', 3);
    assert.ok(command(s, 'chain').argv[3]!.startsWith('https://boot.example.com/bw/ipxe?mac='));
    assert.deepEqual(command(s, 'sleep').argv, ['sleep', '3']);
    assert.throws(() => bootScript(BASE, 0), TypeError);
    assert.throws(() => bootScript('/relative'), TypeError);
  });
});

describe('provisioningArgs and bootFormat', () => {
  it('chooses the format from the profile output, cloud-config by default', () => {
    assert.equal(bootFormat('ignition'), 'ignition');
    assert.equal(bootFormat('cloud-config'), 'cloud-config');
    assert.equal(bootFormat(undefined), 'cloud-config');
  });

  it('gives Ignition its first-boot flag, platform and signed config URL', () => {
    const url = bootstrapUrl('ignition', BASE, 'node-1', KEY, 3600, NOW);
    assert.deepEqual(provisioningArgs('ignition', url), ['ignition.firstboot', 'ignition.platform.id=metal', `ignition.config.url=${url}`]);
  });

  it('gives cloud-init a NoCloud seed prefix', () => {
    const url = bootstrapUrl('cloud-config', BASE, 'node-1', KEY, 3600, NOW);
    assert.deepEqual(provisioningArgs('cloud-config', url), [`ds=nocloud-net;s=${url}`]);
    assert.deepEqual(provisioningArgs('cloud-config', url, { nocloudDatasource: 'nocloud' }), [`ds=nocloud;s=${url}`]);
    assert.throws(() => provisioningArgs('cloud-config', `${BASE}/nocloud/node-1`), TypeError);
    assert.throws(() => provisioningArgs('cloud-config', `${BASE}/a;b/`), TypeError);
    assert.throws(() => provisioningArgs('ignition', `${BASE}/ignition?x=\${y}`), TypeError);
  });
});

describe('machineScript', () => {
  const boot = {
    kernel: 'assets/fcos/kernel',
    initrd: ['assets/fcos/initramfs.img', 'https://mirror.example.com/extra.cpio'],
    args: ['console=ttyS0,115200n8', 'coreos.live.rootfs_url=http://10.0.2.2:8080/assets/fcos/rootfs.img', 'pw=$6$salt$hash'],
  };
  const url = bootstrapUrl('ignition', BASE, 'node-1', KEY, 3600, NOW);
  const extra = provisioningArgs('ignition', url);
  const script = machineScript(boot, extra, BASE);

  it('is a #!ipxe script whose fallible commands are guarded and whose URLs parse', () => {
    assert.ok(script.startsWith('#!ipxe\n'));
    assertGuarded(script, ['kernel', 'initrd', 'boot', 'chain']);
    const urls = assertUrlsParse(script);
    assert.ok(urls.includes(url));
  });

  it('hands the kernel exactly the arguments given, after the initrd names', () => {
    assert.deepEqual(command(script, 'kernel').argv, [
      'kernel',
      'http://10.0.2.2:8080/assets/fcos/kernel',
      'initrd=initrd0',
      'initrd=initrd1',
      'console=ttyS0,115200n8',
      'coreos.live.rootfs_url=http://10.0.2.2:8080/assets/fcos/rootfs.img',
      'pw=$6$salt$hash',
      'ignition.firstboot',
      'ignition.platform.id=metal',
      `ignition.config.url=${url}`,
    ]);
    const initrds = simulate(script).filter((c) => c.argv[0] === 'initrd');
    assert.deepEqual(
      initrds.map((c) => c.argv),
      [
        ['initrd', '--name', 'initrd0', 'http://10.0.2.2:8080/assets/fcos/initramfs.img'],
        ['initrd', '--name', 'initrd1', 'https://mirror.example.com/extra.cpio'],
      ],
    );
  });

  it('starts with imgfree, boots, and on failure starts over from /boot.ipxe without printing URLs', () => {
    const cmds = simulate(script);
    assert.deepEqual(cmds[0]!.argv, ['imgfree']);
    assert.deepEqual(command(script, 'chain').argv, ['chain', '--replace', '--autofree', 'http://10.0.2.2:8080/boot.ipxe']);
    for (const echo of cmds.filter((c) => c.argv[0] === 'echo')) assert.ok(!echo.argv.join(' ').includes('http'), echo.argv.join(' '));
    assert.ok(!script.includes('sig=') || script.split('\n').filter((l) => l.includes('sig=')).every((l) => l.startsWith('kernel ')));
  });

  it('passes a NoCloud seed through unchanged', () => {
    const seed = bootstrapUrl('cloud-config', BASE, 'node-1', KEY, 3600, NOW);
    const s = machineScript({ kernel: 'http://h/vmlinuz', initrd: [], args: [] }, provisioningArgs('cloud-config', seed), BASE);
    assert.deepEqual(command(s, 'kernel').argv, ['kernel', 'http://h/vmlinuz', `ds=nocloud-net;s=${seed}`]);
  });

  it('refuses arguments iPXE would alter, naming each', () => {
    const bad = { kernel: 'vmlinuz', initrd: [], args: ['ok=1', 'root="a b"', 'x=${y}', '#rest', 'initrd=main', 'ignition.platform.id=qemu'] };
    assert.throws(
      () => machineScript(bad, extra, BASE),
      (e: unknown) => {
        assert.ok(e instanceof RequestError);
        assert.deepEqual(
          e.problems.map((p) => p.path),
          ['boot.args[1]', 'boot.args[2]', 'boot.args[3]', 'boot.args[4]', 'boot.args[5]'],
        );
        assert.match(e.problems[4]!.message, /ignition\.platform\.id is set by bootwright/);
        return true;
      },
    );
  });

  it('refuses bad kernel and initrd references and an over-long command line', () => {
    assert.throws(
      () => machineScript({ kernel: 'file:///k', initrd: ['ok', 'http://h/?a=${b}'], args: [] }, [], BASE),
      (e: unknown) => e instanceof RequestError && e.problems.map((p) => p.path).join() === 'boot.kernel,boot.initrd[1]',
    );
    assert.throws(
      () => machineScript({ kernel: 'k', initrd: [], args: [`x=${'a'.repeat(2046)}`] }, [], BASE),
      (e: unknown) => e instanceof RequestError && e.message.includes('2048 bytes; Linux keeps at most 2047'),
    );
    assert.doesNotThrow(() => machineScript({ kernel: 'k', initrd: [], args: [`x=${'a'.repeat(2045)}`] }, [], BASE));
  });
});

describe('unknownMachineScript', () => {
  const identity: MachineIdentity = machineIdentity(
    new URLSearchParams('mac=52-54-00-12-34-56&uuid=4c4c4544-0051-4410-8051-b3c04f4a4a32&serial_hex=53:4e:20:34:32:2f:41:26:26:20:72:65:62:6f:6f:74:20:23:24:7b:78:7d'),
  );
  const script = unknownMachineScript(identity, 30, BASE);

  it('prints what the machine reported, made harmless, then sleeps and re-chains /boot.ipxe', () => {
    assert.ok(script.startsWith('#!ipxe\n'));
    assertGuarded(script, ['chain']);
    assertUrlsParse(script);
    const cmds = simulate(script, { x: 'EXPANDED' });
    const echoed = cmds.filter((c) => c.argv[0] === 'echo').map((c) => c.argv.slice(1).join(' '));
    assert.ok(echoed.includes('bootwright: this machine reported mac=52:54:00:12:34:56 uuid=4c4c4544-0051-4410-8051-b3c04f4a4a32 serial=SN_42/A___reboot____x_'), echoed.join('\n'));
    // The serial "SN 42/A&& reboot #${x}" neither ends the echo nor runs anything.
    assert.deepEqual(
      cmds.map((c) => c.argv[0] ?? `:${c.label!}`),
      ['echo', 'echo', 'echo', ':bootwright_retry', 'echo', 'sleep', 'chain', 'goto'],
    );
    assert.deepEqual(command(script, 'sleep').argv, ['sleep', '30']);
    assert.deepEqual(command(script, 'chain').argv, ['chain', '--replace', '--autofree', 'http://10.0.2.2:8080/boot.ipxe']);
  });

  it('says so when nothing usable was reported, naming unusable parameters', () => {
    const s = unknownMachineScript(machineIdentity(new URLSearchParams('mac=zz&uuid=')), 5, BASE);
    const echoed = simulate(s).filter((c) => c.argv[0] === 'echo').map((c) => c.argv.slice(1).join(' '));
    assert.ok(echoed.includes('bootwright: this machine reported no usable MAC, UUID, serial or host name'));
    assert.ok(echoed.includes('bootwright: unusable values for mac'));
  });

  it('cuts long values', () => {
    assert.equal(echoSafe('x'.repeat(100)), `${'x'.repeat(64)}...`);
    assert.equal(echoSafe('a b#c$d{e}f|g&h;i\\j'), 'a_b_c_d_e_f_g_h_i_j');
  });
});

describe('bootScript with a plain-HTTP fallback (issue 16)', () => {
  const script = bootScript('https://10.0.2.100:8443', 10, 'http://10.0.2.100:8080');

  it('chains /ipxe over https first, then over the plain listener, then waits and retries', () => {
    assertUrlsParse(script);
    const chains = simulate(script).filter((c) => c.argv[0] === 'chain');
    assert.equal(chains.length, 2);
    assert.ok(chains[0]!.argv[3]!.startsWith('https://10.0.2.100:8443/ipxe?mac='), chains[0]!.argv.join(' '));
    assert.equal(chains[0]!.next, '||', 'the plain chain runs only when the https one fails');
    assert.ok(chains[1]!.argv[3]!.startsWith('http://10.0.2.100:8080/ipxe?mac='), chains[1]!.argv.join(' '));
    assert.equal(chains[1]!.next, '||');
    assert.equal(chains[0]!.line, chains[1]!.line);
    // The same identity query on both.
    assert.equal(chains[0]!.argv[3]!.split('?')[1], chains[1]!.argv[3]!.split('?')[1]);
    assert.match(script, /\|\| goto bootwright_wait\n:bootwright_wait/);
  });

  it('without a plain base URL, the script is the one it always was', () => {
    assert.equal(bootScript(BASE, 10, undefined), bootScript(BASE));
    assert.throws(() => bootScript(BASE, 10, 'ftp://h'), TypeError);
  });
});
