/**
 * A node's network configuration (`spec.network` of a NodeBootstrap, a Machine, and a
 * Profile's default), in the field's own shape: netplan's YAML, version 2, which is also
 * cloud-init's network-config v2 (cloud-init docs "Networking config Version 2"). The
 * subset bootwright renders in both formats:
 *
 * - `ethernets.<id>`: `match` (`macaddress`), `set-name` (needs `match`); without
 *   `match`, the id is the device's name;
 * - `bonds.<id>`: `interfaces` (ids of ethernets), `parameters` (`mode`,
 *   `mii-monitor-interval` in milliseconds, `lacp-rate`, `transmit-hash-policy`,
 *   `primary`);
 * - `vlans.<id>`: `id` (0–4094), `link` (an ethernet or bond id);
 * - on each: `dhcp4`, `dhcp6`, `addresses` (CIDR), `routes` (`to`: CIDR or `default`,
 *   `via`, `metric`), `gateway4` and `gateway6` (netplan's deprecated spelling of a
 *   default route), `nameservers` (`addresses`, `search`), `mtu`.
 *
 * Every other netplan key is refused when written, naming it: a key one format would
 * drop could never mean the same on both. Cross-references (a bond member, a VLAN link)
 * are checked here, so a machine whose network cannot come up is refused when written.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { normaliseMac } from '../boot/identity.js';

/**
 * An interface id, which is also its Linux name for bonds, VLANs and ethernets without
 * `match`: at most 15 characters (IFNAMSIZ − 1) of letters, digits, `-`, `_` and `.`,
 * not `.` or `..`.
 */
export const interfaceName = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$/, 'must be an interface name: 1 to 15 letters, digits, "-", "_" or ".", not starting with "." or "-"');

/** An IPv4 or IPv6 address, without a prefix. */
const ipAddress = z.string().refine((v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address');

/** `address/prefix`, the prefix within the family's bits. */
export function cidrProblem(v: string): string | undefined {
  const slash = v.lastIndexOf('/');
  if (slash < 0) return 'must be an address with its prefix length, such as 192.0.2.10/24 or 2001:db8::10/64';
  const family = isIP(v.slice(0, slash));
  const bits = v.slice(slash + 1);
  if (family === 0) return 'must start with an IPv4 or IPv6 address';
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return `must end in a prefix length from 0 to ${family === 4 ? 32 : 128}`;
  return undefined;
}

const cidr = z.string().superRefine((v, ctx) => {
  const problem = cidrProblem(v);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const route = z.strictObject({
  /** A destination CIDR, or `default` (written `0.0.0.0/0` or `::/0` by the family of `via`). */
  to: z.union([z.literal('default'), cidr]),
  via: ipAddress,
  metric: z.int().min(0).max(4294967295).optional(),
});

/** What every kind of interface carries: its addresses, routes, DNS and MTU. */
const l3 = {
  dhcp4: z.boolean().optional(),
  dhcp6: z.boolean().optional(),
  addresses: z.array(cidr).max(64).optional(),
  /** Deprecated by netplan for `routes: [{to: default, via}]`, still common; read as that route. */
  gateway4: ipAddress.refine((v) => isIP(v) === 4, 'must be an IPv4 address').optional(),
  gateway6: ipAddress.refine((v) => isIP(v) === 6, 'must be an IPv6 address').optional(),
  routes: z.array(route).max(64).optional(),
  nameservers: z
    .strictObject({
      addresses: z.array(ipAddress).max(8).optional(),
      search: z.array(z.string().regex(/^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$/, 'must be a DNS domain')).max(8).optional(),
    })
    .optional(),
  mtu: z.int().min(68).max(65535).optional(),
};

const ethernet = z.strictObject({
  // By MAC only: cloud-init names a matched interface by its MAC, its set-name or its id,
  // never by match.name (network_state.py handle_ethernets), so a name match would mean
  // one device to networkd and another to cloud-init.
  match: z
    .strictObject({ macaddress: z.string().refine((v) => normaliseMac(v) !== undefined, 'must be a MAC address such as aa:bb:cc:dd:ee:ff') })
    .optional(),
  'set-name': interfaceName.optional(),
  ...l3,
});

/** Bond modes as the kernel's bonding driver and netplan name them. */
export const BOND_MODES = ['balance-rr', 'active-backup', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb'] as const;

const bond = z.strictObject({
  interfaces: z.array(interfaceName).min(1).max(16),
  parameters: z
    .strictObject({
      mode: z.enum(BOND_MODES).optional(),
      /** Milliseconds. */
      'mii-monitor-interval': z.int().min(0).max(3_600_000).optional(),
      'lacp-rate': z.enum(['slow', 'fast']).optional(),
      'transmit-hash-policy': z.enum(['layer2', 'layer3+4', 'layer2+3', 'encap2+3', 'encap3+4']).optional(),
      primary: interfaceName.optional(),
    })
    .optional(),
  ...l3,
});

const vlan = z.strictObject({
  id: z.int().min(0).max(4094),
  link: interfaceName,
  ...l3,
});

/** At most this many interfaces of all kinds. */
export const MAX_INTERFACES = 32;

/**
 * `spec.network`: netplan / cloud-init network-config version 2, the subset above.
 * Refinements: ids unique across kinds and at most {@link MAX_INTERFACES}; `set-name`
 * only with `match`; a bond's members are ethernets, in at most one bond, and its
 * `primary` one of them; a VLAN's link is an ethernet or a bond; `lacp-rate` only in
 * `802.3ad` mode; a route's `via` of the family of its `to`; routes only on an interface
 * with an address or DHCP.
 */
export const networkSchema = z
  .strictObject({
    version: z.literal(2),
    ethernets: z.record(interfaceName, ethernet).optional(),
    bonds: z.record(interfaceName, bond).optional(),
    vlans: z.record(interfaceName, vlan).optional(),
  })
  .superRefine((n, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const ethernets = Object.keys(n.ethernets ?? {});
    const bonds = Object.keys(n.bonds ?? {});
    const seen = new Map<string, string>();
    for (const [kind, ids] of [['ethernets', ethernets], ['bonds', bonds], ['vlans', Object.keys(n.vlans ?? {})]] as const) {
      for (const id of ids) {
        const other = seen.get(id);
        if (other) issue([kind, id], `the id ${id} is also one of ${other}; interface ids are unique`);
        else seen.set(id, kind);
      }
    }
    if (seen.size > MAX_INTERFACES) issue([], `has ${seen.size} interfaces; at most ${MAX_INTERFACES}`);
    for (const [id, e] of Object.entries(n.ethernets ?? {})) {
      if (e['set-name'] !== undefined && e.match === undefined) issue(['ethernets', id, 'set-name'], 'needs match (netplan renames only a matched device)');
    }
    const member = new Map<string, string>();
    for (const [id, b] of Object.entries(n.bonds ?? {})) {
      b.interfaces.forEach((m, i) => {
        if (!ethernets.includes(m)) issue(['bonds', id, 'interfaces', i], `${m} is not one of ethernets`);
        else if (member.has(m)) issue(['bonds', id, 'interfaces', i], `${m} is already in bond ${member.get(m)!}`);
        else member.set(m, id);
      });
      const primary = b.parameters?.primary;
      if (primary !== undefined && !b.interfaces.includes(primary)) issue(['bonds', id, 'parameters', 'primary'], `${primary} is not one of this bond's interfaces`);
      if (b.parameters?.['lacp-rate'] !== undefined && b.parameters.mode !== '802.3ad') issue(['bonds', id, 'parameters', 'lacp-rate'], 'applies to mode 802.3ad only');
    }
    for (const [id, v] of Object.entries(n.vlans ?? {})) {
      if (!ethernets.includes(v.link) && !bonds.includes(v.link)) issue(['vlans', id, 'link'], `${v.link} is not one of ethernets or bonds`);
    }
    type Routed = { routes?: z.infer<typeof route>[]; addresses?: string[]; dhcp4?: boolean; dhcp6?: boolean; gateway4?: string; gateway6?: string };
    const routed: [string, Record<string, Routed> | undefined][] = [['ethernets', n.ethernets], ['bonds', n.bonds], ['vlans', n.vlans]];
    for (const [kind, group] of routed) {
      for (const [id, i] of Object.entries(group ?? {})) {
        // cloud-init hangs routes on an interface's subnets: with no address and no DHCP it
        // drops them (both its networkd and eni renderers, 22.4), where networkd keeps them.
        const addressed = (i.addresses ?? []).length > 0 || i.dhcp4 === true || i.dhcp6 === true;
        if (!addressed && ((i.routes ?? []).length > 0 || i.gateway4 !== undefined || i.gateway6 !== undefined)) {
          issue([kind, id, (i.routes ?? []).length > 0 ? 'routes' : i.gateway4 !== undefined ? 'gateway4' : 'gateway6'], 'needs addresses, dhcp4 or dhcp6 on the same interface (cloud-init drops the routes of an interface with none)');
        }
        (i.routes ?? []).forEach((r, k) => {
          if (r.to === 'default' || cidrProblem(r.to) !== undefined || isIP(r.via) === 0) return;
          if (isIP(r.to.slice(0, r.to.lastIndexOf('/'))) !== isIP(r.via)) issue([kind, id, 'routes', k, 'via'], 'must be of the same address family as to');
        });
      }
    }
  });

export type NetworkInput = z.infer<typeof networkSchema>;
