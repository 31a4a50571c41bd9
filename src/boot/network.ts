/**
 * Kernel arguments that bring a machine's network (`spec.network`) up before its
 * bootstrap data is fetched, added by `/ipxe` after the signed URL (ipxe.ts
 * `machineScript`); none for a machine without a network, so what earlier releases
 * served is unchanged.
 *
 * - cloud-config: `network-config=<base64 of network-config v2>`: cloud-init reads it in
 *   its local stage, before the NoCloud seed is fetched, and prefers it to every other
 *   source (`cloudinit.net.cmdline.read_kernel_cmdline_config`; `Init._find_networking_config`
 *   orders cmdline, initramfs, datasource). So a static address holds for the seed's
 *   own fetch. Plain base64, not gzip: the bytes must not depend on the zlib version.
 * - Ignition: dracut's `ip=` (dracut.cmdline(7)) for each ethernet that is not in a bond
 *   and has a static address and a name the initramfs knows (`set-name`, or the id
 *   without `match`), `ifname=<name>:<mac>` for a renamed one, and
 *   `nameserver=`: Ignition fetches its config from the initramfs, before the units it
 *   writes exist. Bonds and VLANs are not brought up in the initramfs (the config is then
 *   fetched over whatever DHCP gives there; docs/network.md).
 */
import { isIP } from 'node:net';
import type { OutputFormat } from '../provision/formats.js';
import { renderNetworkConfig } from '../provision/cloudinit/network.js';
import { type PlanInterface, planNetwork } from '../provision/plan/network.js';
import type { NetworkInput } from '../request/network.js';

/** A dotted IPv4 netmask for a prefix length 0–32. */
function netmask(bits: number): string {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return [24, 16, 8, 0].map((s) => (mask >>> s) & 0xff).join('.');
}

/** dracut's `ip=` for one interface's first static address, or undefined. */
function dracutIp(i: PlanInterface, name: string): string | undefined {
  const address = i.addresses[0];
  if (address === undefined) return undefined;
  const slash = address.lastIndexOf('/');
  const ip = address.slice(0, slash);
  const bits = Number(address.slice(slash + 1));
  const v6 = isIP(ip) === 6;
  const gateway = i.routes.find((r) => r.to === (v6 ? '::/0' : '0.0.0.0/0'))?.via;
  const wrap = (a: string) => (v6 ? `[${a}]` : a);
  const mask = v6 ? String(bits) : netmask(bits);
  return `ip=${wrap(ip)}::${gateway !== undefined ? wrap(gateway) : ''}:${mask}::${name}:none${i.mtu !== undefined ? `:${i.mtu}` : ''}`;
}

/**
 * The kernel arguments for `network` in `format`, in a fixed order.
 *
 * @param format the machine's boot format (ipxe.ts `bootFormat`)
 * @param network the machine's network (its own, else its profile's), validated
 * @returns [] without a network
 */
export function networkBootArgs(format: OutputFormat, network: NetworkInput | undefined): string[] {
  const plan = planNetwork(network);
  if (!plan) return [];
  if (format !== 'ignition') return [`network-config=${Buffer.from(renderNetworkConfig(plan), 'utf8').toString('base64')}`];
  const args: string[] = [];
  const nameservers = new Set<string>();
  for (const i of plan.interfaces) {
    if (i.kind !== 'ethernet' || i.bond !== undefined) continue;
    // The name in the initramfs: set-name given there by ifname= (which needs the MAC), else the kernel's.
    const rename = i.setName !== undefined && i.match !== undefined ? `ifname=${i.setName}:${i.match.mac}` : undefined;
    const name = rename !== undefined ? i.setName : i.match === undefined ? i.id : undefined;
    if (name === undefined) continue;
    const ip = dracutIp(i, name);
    if (ip === undefined) continue;
    if (rename !== undefined) args.push(rename);
    args.push(ip);
    for (const ns of i.nameservers) nameservers.add(ns);
  }
  if (args.length > 0) for (const ns of nameservers) args.push(`nameserver=${ns}`);
  return args;
}
