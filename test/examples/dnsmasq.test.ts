/**
 * The dnsmasq configurations of examples/dnsmasq/ parse as dnsmasq reads them
 * (`dnsmasq --test -C FILE`, Debian's dnsmasq-base), chain iPXE to the service's
 * /boot.ipxe, and are the ones docs/bare-metal.md shows (its ini blocks hold the same
 * directives).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { missingDependency } from '../support/missing.js';

const DNSMASQ = ['/usr/sbin/dnsmasq', '/usr/bin/dnsmasq'].find((p) => existsSync(p));
const FILES = ['proxy-dhcp.conf', 'dhcp-server.conf'];
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
/** The directives of a configuration: its lines without comments and blank lines. */
const directives = (text: string) => text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));

describe('examples/dnsmasq', () => {
  for (const file of FILES) {
    it(`${file} passes dnsmasq --test`, { skip: DNSMASQ ? false : missingDependency('dnsmasq is not installed (apt-get install dnsmasq-base): the DHCP examples are NOT parsed') }, () => {
      const r = spawnSync(DNSMASQ!, ['--test', '-C', new URL(`../../examples/dnsmasq/${file}`, import.meta.url).pathname], { encoding: 'utf8', timeout: 10_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /syntax check OK/);
    });
  }

  it('a configuration dnsmasq cannot read fails the same check (the check can fail)', { skip: DNSMASQ ? false : 'dnsmasq is not installed' }, () => {
    const r = spawnSync(DNSMASQ!, ['--test', '-C', '/dev/stdin'], { input: 'pxe-service=tag:ipxe,x86PC\nbogus-option=1\n', encoding: 'utf8', timeout: 10_000 });
    assert.notEqual(r.status, 0);
  });

  it('both chain iPXE to /boot.ipxe and load Debian ipxe binaries over TFTP; docs/bare-metal.md shows the same directives', () => {
    const doc = read('docs/bare-metal.md');
    const blocks = [...doc.matchAll(/```ini\n([\s\S]*?)```/g)].map((m) => directives(m[1]!));
    for (const file of FILES) {
      const d = directives(read(`examples/dnsmasq/${file}`));
      assert.ok(d.some((l) => l.endsWith('/boot.ipxe')), `${file} chains to /boot.ipxe`);
      assert.ok(d.some((l) => l.includes('undionly.kpxe')) && d.some((l) => l.includes('snponly.efi')), `${file} serves iPXE for BIOS and UEFI`);
      assert.ok(blocks.some((b) => JSON.stringify(b) === JSON.stringify(d)), `docs/bare-metal.md shows ${file}`);
    }
  });
});
