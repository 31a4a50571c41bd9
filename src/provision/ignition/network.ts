/**
 * The plan's network as systemd-networkd units (systemd.network(5), systemd.netdev(5),
 * systemd.link(5)), the network stack of Flatcar Container Linux, written by Ignition
 * into `/etc/systemd/network/` the way netplan's networkd backend lays them out:
 *
 * - each interface: `10-bootwright-<id>.network`, `[Match]` by `PermanentMACAddress=`
 *   (a MAC-matched ethernet: the bond and VLANs on it take the same current MAC, so
 *   `MACAddress=` would match them too; netplan 0.106 made the same change), else
 *   `Name=`; `[Link] MTUBytes=`; `[Network]` `DHCP=`, `DNS=`, `Domains=`, `Bond=` for a
 *   member (with `PrimarySlave=true` for the primary), `VLAN=` for each VLAN on it;
 *   `[Address]` and `[Route]` sections;
 * - `set-name`: `10-bootwright-<id>.link`, `[Match] PermanentMACAddress=`, `[Link] Name=`
 *   (udev renames the device when it appears);
 * - bonds and VLANs: `10-bootwright-<id>.netdev` (`Kind=bond` with `[Bond]`, `Kind=vlan`
 *   with `[VLAN] Id=`).
 *
 * `10-` sorts before the image's defaults (Flatcar's `zz-default.network`), and networkd
 * applies the first `.network` file that matches a link. Fedora CoreOS runs
 * NetworkManager, which reads none of these (docs/network.md says so).
 */
import type { PlanInterface, PlanNetwork } from '../plan/network.js';
import type { IgnitionFile, Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { generatedFile } from './files.js';

/** Where the units go. */
export const NETWORKD_DIR = '/etc/systemd/network';
const UNIT_MODE = 0o644;

/** `[Section]` then `Key=value` lines; sections with no lines are left out. */
function unit(sections: [string, [string, string | number][]][]): string {
  return sections
    .filter(([, lines]) => lines.length > 0)
    .map(([name, lines]) => `[${name}]\n${lines.map(([k, v]) => `${k}=${v}`).join('\n')}\n`)
    .join('\n');
}

/** networkd's `DHCP=` for netplan's `dhcp4`/`dhcp6` (absent both: `no`). */
function dhcp(i: PlanInterface): string {
  if (i.dhcp4 && i.dhcp6) return 'yes';
  if (i.dhcp4) return 'ipv4';
  if (i.dhcp6) return 'ipv6';
  return 'no';
}

/** The `.network` unit of one interface. */
function networkUnit(i: PlanInterface, all: readonly PlanInterface[]): string {
  const match: [string, string][] = [];
  if (i.kind === 'ethernet' && i.match) {
    match.push(['PermanentMACAddress', i.match.mac]);
  } else {
    match.push(['Name', i.id]);
  }
  const network: [string, string][] = [['DHCP', dhcp(i)]];
  for (const ns of i.nameservers) network.push(['DNS', ns]);
  if (i.search.length) network.push(['Domains', i.search.join(' ')]);
  if (i.bond !== undefined) {
    network.push(['Bond', i.bond]);
    const bond = all.find((b) => b.kind === 'bond' && b.id === i.bond);
    if (bond?.bondParameters?.primary === i.id) network.push(['PrimarySlave', 'true']);
  }
  for (const v of i.vlans) network.push(['VLAN', v]);
  return [
    unit([
      ['Match', match],
      ['Link', i.mtu !== undefined ? [['MTUBytes', i.mtu]] : []],
      ['Network', network],
    ]),
    ...i.addresses.map((a) => unit([['Address', [['Address', a]]]])),
    ...i.routes.map((r) => unit([['Route', [['Destination', r.to], ['Gateway', r.via], ...(r.metric !== undefined ? [['Metric', r.metric] as [string, number]] : [])]]])),
  ].join('\n');
}

/** The `.netdev` unit of a bond or VLAN. */
function netdevUnit(i: PlanInterface): string {
  if (i.kind === 'vlan') return unit([['NetDev', [['Name', i.id], ['Kind', 'vlan']]], ['VLAN', [['Id', i.vlanId!]]]]);
  const p = i.bondParameters ?? {};
  return unit([
    ['NetDev', [['Name', i.id], ['Kind', 'bond']]],
    [
      'Bond',
      [
        ...(p.mode !== undefined ? [['Mode', p.mode] as [string, string]] : []),
        ...(p.miiMonitorInterval !== undefined ? [['MIIMonitorSec', `${p.miiMonitorInterval}ms`] as [string, string]] : []),
        ...(p.lacpRate !== undefined ? [['LACPTransmitRate', p.lacpRate] as [string, string]] : []),
        ...(p.transmitHashPolicy !== undefined ? [['TransmitHashPolicy', p.transmitHashPolicy] as [string, string]] : []),
      ],
    ],
  ]);
}

/**
 * The plan's network as Ignition `storage.files[]` entries (mode 0644, root-owned,
 * replaced whole), interface by interface in plan order: `.link` or `.netdev` first, then
 * `.network`; none without a network.
 */
export function networkEntries(network: PlanNetwork | undefined, encoding: EncodeOptions): Sourced<IgnitionFile>[] {
  if (!network) return [];
  const out: Sourced<IgnitionFile>[] = [];
  for (const i of network.interfaces) {
    const base = `${NETWORKD_DIR}/10-bootwright-${i.id}`;
    if (i.kind === 'ethernet' && i.setName !== undefined && i.match) {
      out.push(generatedFile(`${base}.link`, unit([['Match', [['PermanentMACAddress', i.match.mac]]], ['Link', [['Name', i.setName]]]]), UNIT_MODE, encoding, i.origin));
    }
    if (i.kind !== 'ethernet') out.push(generatedFile(`${base}.netdev`, netdevUnit(i), UNIT_MODE, encoding, i.origin));
    out.push(generatedFile(`${base}.network`, networkUnit(i, network.interfaces), UNIT_MODE, encoding, i.origin));
  }
  return out;
}
