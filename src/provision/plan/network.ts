/**
 * The plan's network (`spec.network`, src/request/network.ts): netplan version 2 turned
 * into one list of interfaces with every value both renderers need resolved once, so
 * cloud-init's network-config (../cloudinit/network.ts), Ignition's systemd-networkd
 * units (../ignition/network.ts) and the kernel's `ip=` arguments (src/boot/network.ts)
 * say the same thing:
 *
 * - MACs in lower-case colon form;
 * - a route `to: default` as `0.0.0.0/0` or `::/0`, by the family of its `via`
 *   (cloud-init before 23.1 refuses `default`: "Address default is not a valid ip
 *   address", found with cloud-init 22.4's `devel net-convert`);
 * - `gateway4` and `gateway6` as the default routes they stand for, before `routes`;
 * - each ethernet's bond (if it is a member) and the VLANs on each link.
 */
import { isIP } from 'node:net';
import { normaliseMac } from '../../boot/identity.js';
import type { NetworkInput } from '../../request/network.js';

/** Interface kinds, in the order netplan lists them and the renderers write them. */
export type InterfaceKind = 'ethernet' | 'bond' | 'vlan';

/** A route with its destination resolved. */
export interface PlanRoute {
  /** A CIDR: `0.0.0.0/0` or `::/0` for a default route. */
  to: string;
  via: string;
  metric?: number;
}

/** Bond parameters, netplan's names. */
export interface PlanBondParameters {
  mode?: string;
  /** Milliseconds. */
  miiMonitorInterval?: number;
  lacpRate?: 'slow' | 'fast';
  transmitHashPolicy?: string;
  primary?: string;
}

/** One interface of the plan. */
export interface PlanInterface {
  kind: InterfaceKind;
  /** The netplan id: the Linux name of bonds, VLANs and ethernets without `match`. */
  id: string;
  /** The request field, e.g. `spec.network.ethernets.eno1`. */
  origin: string;
  /** Ethernets: the device matched by its MAC (absent: the one named `id`). */
  match?: { mac: string };
  /** Ethernets: the name given to the matched device. */
  setName?: string;
  /** Ethernets: the bond this one is a member of. */
  bond?: string;
  /** Bonds: the member ethernets' ids, in order. */
  members?: string[];
  bondParameters?: PlanBondParameters;
  /** VLANs: the tag and the parent interface's id. */
  vlanId?: number;
  link?: string;
  /** The ids of the VLANs whose link this interface is, in order. */
  vlans: string[];
  dhcp4?: boolean;
  dhcp6?: boolean;
  addresses: string[];
  routes: PlanRoute[];
  nameservers: string[];
  search: string[];
  mtu?: number;
}

/** The plan's network. */
export interface PlanNetwork {
  /** Ethernets, then bonds, then VLANs, each in the request's order. */
  interfaces: PlanInterface[];
}

/**
 * The plan's network from `spec.network` (already validated by `networkSchema`), or
 * undefined without one. Pure; the same input gives the same plan.
 */
export function planNetwork(network: NetworkInput | undefined): PlanNetwork | undefined {
  if (network === undefined) return undefined;
  const bondOf = new Map<string, string>();
  for (const [id, b] of Object.entries(network.bonds ?? {})) for (const m of b.interfaces) bondOf.set(m, id);
  const vlansOn = new Map<string, string[]>();
  for (const [id, v] of Object.entries(network.vlans ?? {})) vlansOn.set(v.link, [...(vlansOn.get(v.link) ?? []), id]);

  type L3 = NonNullable<NetworkInput['ethernets']>[string];
  const common = (kind: InterfaceKind, group: string, id: string, i: Pick<L3, 'dhcp4' | 'dhcp6' | 'addresses' | 'gateway4' | 'gateway6' | 'routes' | 'nameservers' | 'mtu'>) => ({
    kind,
    id,
    origin: `spec.network.${group}.${id}`,
    vlans: vlansOn.get(id) ?? [],
    ...(i.dhcp4 !== undefined ? { dhcp4: i.dhcp4 } : {}),
    ...(i.dhcp6 !== undefined ? { dhcp6: i.dhcp6 } : {}),
    addresses: i.addresses ?? [],
    routes: [
      ...(i.gateway4 !== undefined ? [{ to: '0.0.0.0/0', via: i.gateway4 }] : []),
      ...(i.gateway6 !== undefined ? [{ to: '::/0', via: i.gateway6 }] : []),
      ...(i.routes ?? []).map((r) => ({
        to: r.to === 'default' ? (isIP(r.via) === 6 ? '::/0' : '0.0.0.0/0') : r.to,
        via: r.via,
        ...(r.metric !== undefined ? { metric: r.metric } : {}),
      })),
    ],
    nameservers: i.nameservers?.addresses ?? [],
    search: i.nameservers?.search ?? [],
    ...(i.mtu !== undefined ? { mtu: i.mtu } : {}),
  });

  const interfaces: PlanInterface[] = [];
  for (const [id, e] of Object.entries(network.ethernets ?? {})) {
    interfaces.push({
      ...common('ethernet', 'ethernets', id, e),
      ...(e.match ? { match: { mac: normaliseMac(e.match.macaddress)! } } : {}),
      ...(e['set-name'] !== undefined ? { setName: e['set-name'] } : {}),
      ...(bondOf.has(id) ? { bond: bondOf.get(id)! } : {}),
    });
  }
  for (const [id, b] of Object.entries(network.bonds ?? {})) {
    const p = b.parameters;
    const parameters: PlanBondParameters = {
      ...(p?.mode !== undefined ? { mode: p.mode } : {}),
      ...(p?.['mii-monitor-interval'] !== undefined ? { miiMonitorInterval: p['mii-monitor-interval'] } : {}),
      ...(p?.['lacp-rate'] !== undefined ? { lacpRate: p['lacp-rate'] } : {}),
      ...(p?.['transmit-hash-policy'] !== undefined ? { transmitHashPolicy: p['transmit-hash-policy'] } : {}),
      ...(p?.primary !== undefined ? { primary: p.primary } : {}),
    };
    interfaces.push({ ...common('bond', 'bonds', id, b), members: [...b.interfaces], ...(p ? { bondParameters: parameters } : {}) });
  }
  for (const [id, v] of Object.entries(network.vlans ?? {})) {
    interfaces.push({ ...common('vlan', 'vlans', id, v), vlanId: v.id, link: v.link });
  }
  return { interfaces };
}
