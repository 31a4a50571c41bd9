/**
 * What a network configuration means, read back from two renderings: bootwright's
 * systemd-networkd units (Ignition output) and the ifupdown `interfaces` file cloud-init
 * itself writes from bootwright's network-config (`cloud-init devel net-convert -O eni`:
 * cloud-init 22.4's networkd renderer leaves bonds and VLANs out, its eni renderer has
 * them). Both become one map: interface (by MAC when matched by MAC, else by name) →
 * addresses, DHCP, routes, DNS, MTU, bond and VLAN membership. cloud-init 22.4 drops
 * route metrics in both of its renderers, so metrics are not compared.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One interface's meaning. */
export interface Meaning {
  name: string;
  dhcp4: boolean;
  dhcp6: boolean;
  addresses: string[];
  routes: string[];
  dns: string[];
  search: string[];
  mtu?: number;
  bond?: string;
  bondMode?: string;
  bondPrimary?: string;
  vlanLink?: string;
  vlanId?: number;
}

const blank = (name: string): Meaning => ({ name, dhcp4: false, dhcp6: false, addresses: [], routes: [], dns: [], search: [] });
const sorted = (m: Map<string, Meaning>) =>
  Object.fromEntries(
    [...m.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => [k, { ...v, addresses: [...v.addresses].sort(), routes: [...v.routes].sort(), dns: [...new Set(v.dns)].sort(), search: [...new Set(v.search)].sort() }]),
  );

/** `[Section]` blocks of a unit file, each a list of [key, value]. */
function sections(text: string): [string, [string, string][]][] {
  const out: [string, [string, string][]][] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) continue;
    const head = /^\[(.+)\]$/.exec(t);
    if (head) out.push([head[1]!, []]);
    else out.at(-1)![1].push([t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)]);
  }
  return out;
}

/**
 * The meaning of networkd units (`path` → text, as Ignition writes them).
 * @returns interfaces keyed `mac:<mac>` or `name:<name>`
 */
export function networkdMeaning(files: Map<string, string>): Record<string, Meaning> {
  const renamed = new Map<string, string>();
  const kinds = new Map<string, { kind: string; mode?: string; id?: number }>();
  for (const [path, text] of files) {
    const s = sections(text);
    if (path.endsWith('.link')) {
      const mac = s.find(([n]) => n === 'Match')![1].find(([k]) => k === 'PermanentMACAddress')?.[1];
      const name = s.find(([n]) => n === 'Link')![1].find(([k]) => k === 'Name')![1];
      if (mac) renamed.set(mac, name);
    }
    if (path.endsWith('.netdev')) {
      const netdev = new Map(s.find(([n]) => n === 'NetDev')![1]);
      const bond = s.find(([n]) => n === 'Bond')?.[1];
      const vlan = s.find(([n]) => n === 'VLAN')?.[1];
      kinds.set(netdev.get('Name')!, { kind: netdev.get('Kind')!, ...(bond?.find(([k]) => k === 'Mode') ? { mode: bond.find(([k]) => k === 'Mode')![1] } : {}), ...(vlan ? { id: Number(vlan.find(([k]) => k === 'Id')![1]) } : {}) });
    }
  }
  const out = new Map<string, Meaning>();
  const vlanLinks: [string, string][] = [];
  const primaries: [string, string][] = [];
  for (const [path, text] of files) {
    if (!path.endsWith('.network')) continue;
    const s = sections(text);
    const match = new Map(s.find(([n]) => n === 'Match')![1]);
    const mac = match.get('PermanentMACAddress') ?? match.get('MACAddress');
    const name = (mac !== undefined ? renamed.get(mac) : undefined) ?? match.get('Name') ?? '';
    const key = mac !== undefined ? `mac:${mac}` : `name:${name}`;
    const m = blank(name);
    for (const [section, lines] of s) {
      for (const [k, v] of lines) {
        if (section === 'Network' && k === 'DHCP') {
          m.dhcp4 = v === 'yes' || v === 'ipv4';
          m.dhcp6 = v === 'yes' || v === 'ipv6';
        }
        if (section === 'Network' && k === 'DNS') m.dns.push(v);
        if (section === 'Network' && k === 'Domains') m.search.push(...v.split(' '));
        if (section === 'Network' && k === 'Bond') m.bond = v;
        if (section === 'Network' && k === 'VLAN') vlanLinks.push([v, name]);
        if (section === 'Network' && k === 'PrimarySlave' && v === 'true') primaries.push([m.bond!, name]);
        if (section === 'Address' && k === 'Address') m.addresses.push(v);
        if (section === 'Link' && k === 'MTUBytes') m.mtu = Number(v);
      }
      if (section === 'Route') {
        const r = new Map(lines);
        m.routes.push(`${r.get('Destination')!} via ${r.get('Gateway')!}`);
      }
    }
    const kind = kinds.get(name);
    if (kind?.mode !== undefined) m.bondMode = kind.mode;
    if (kind?.id !== undefined) m.vlanId = kind.id;
    out.set(key, m);
  }
  for (const [vlan, link] of vlanLinks) out.get(`name:${vlan}`)!.vlanLink = link;
  for (const [bond, primary] of primaries) out.get(`name:${bond}`)!.bondPrimary = primary;
  return sorted(out);
}

/**
 * The meaning of an ifupdown `interfaces` file and cloud-init's udev rename rules, as
 * `cloud-init devel net-convert -O eni` writes them.
 * @param macs each matched interface's MAC by the name cloud-init gives it (cloud-init
 *   names a MAC-matched interface by its id or `set-name`)
 */
export function eniMeaning(interfaces: string, macs: Map<string, string>): Record<string, Meaning> {
  const out = new Map<string, Meaning>();
  let current: Meaning | undefined;
  for (const line of interfaces.split('\n')) {
    const t = line.trim();
    const stanza = /^iface (\S+) (inet6?) (\S+)$/.exec(t);
    if (stanza) {
      const [, name, family, method] = stanza as unknown as [string, string, string, string];
      if (name === 'lo') {
        current = undefined;
        continue;
      }
      const key = macs.has(name) ? `mac:${macs.get(name)!}` : `name:${name}`;
      current = out.get(key) ?? blank(name);
      out.set(key, current);
      if (method === 'dhcp') current[family === 'inet' ? 'dhcp4' : 'dhcp6'] = true;
      continue;
    }
    if (!current || !/^\s/.test(line)) continue;
    const [k, ...rest] = t.split(/\s+/);
    const v = rest.join(' ');
    if (k === 'address') current.addresses.push(v);
    else if (k === 'mtu') current.mtu = Number(v);
    else if (k === 'dns-nameservers') current.dns.push(...rest);
    else if (k === 'dns-search') current.search.push(...rest);
    else if (k === 'dns') {
      // cloud-init 22.4 also writes each interface's own DNS as a Python dict line (on
      // every stanza; dns-nameservers only on static ones, hoisting the rest to lo).
      const list = (key: string) => [...(new RegExp(`'${key}': \\[([^\\]]*)\\]`).exec(v)?.[1] ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]!);
      current.dns.push(...list('nameservers'));
      current.search.push(...list('search'));
    }
    else if (k === 'bond-master') current.bond = v;
    else if (k === 'bond-mode' && current.bond === undefined) current.bondMode = v;
    else if (k === 'bond-primary' && current.bond === undefined) current.bondPrimary = v;
    else if (k === 'vlan-raw-device') current.vlanLink = v;
    else if (k === 'vlan_id') current.vlanId = Number(v);
    else if (k === 'gateway') current.routes.push(`${v.includes(':') ? '::/0' : '0.0.0.0/0'} via ${v}`);
    else if (k === 'post-up') {
      const def = /^route add (-A inet6 )?default gw (\S+)/.exec(v);
      const net = /^route add (?:-A inet6 )?-net (\S+) gw (\S+)/.exec(v);
      if (def) current.routes.push(`${def[1] ? '::/0' : '0.0.0.0/0'} via ${def[2]!}`);
      else if (net) current.routes.push(`${net[1]!} via ${net[2]!}`);
    }
  }
  return sorted(out);
}

/**
 * cloud-init's own reading of a network-config v2 document: `cloud-init devel
 * net-convert -k yaml -D debian -O eni`, read back by {@link eniMeaning}.
 * @throws when cloud-init refuses the document (its stderr in the message)
 */
export async function cloudInitMeaning(networkConfig: string): Promise<Record<string, Meaning>> {
  const dir = mkdtempSync(join(tmpdir(), 'bootwright-netconv-'));
  try {
    writeFileSync(join(dir, 'network-config'), networkConfig);
    await run('cloud-init', ['devel', 'net-convert', '-p', join(dir, 'network-config'), '-k', 'yaml', '-d', join(dir, 'out'), '-D', 'debian', '-O', 'eni'], { timeout: 60_000 });
    const interfaces = readdirSync(join(dir, 'out/etc/network/interfaces.d')).map((f) => readFileSync(join(dir, 'out/etc/network/interfaces.d', f), 'utf8')).join('\n');
    const rules = (() => {
      try {
        return readFileSync(join(dir, 'out/etc/udev/rules.d/70-persistent-net.rules'), 'utf8');
      } catch {
        return '';
      }
    })();
    const macs = new Map<string, string>();
    for (const m of rules.matchAll(/ATTR\{address\}=="([^"]+)", NAME="([^"]+)"/g)) macs.set(m[2]!, m[1]!);
    return eniMeaning(interfaces, macs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
