/**
 * The plan's network as cloud-init network-config version 2 (cloud-init docs
 * "Networking config Version 2", netplan's YAML): served as the NoCloud seed's
 * `network-config` and, base64-encoded, as the kernel argument `network-config=`
 * (src/boot/network.ts), which cloud-init reads first in its local stage
 * (`cloudinit.net.cmdline.read_kernel_cmdline_config`), before any seed is fetched.
 */
import { dumpYaml } from '../../yaml/dump.js';
import type { PlanInterface, PlanNetwork } from '../plan/network.js';

type Doc = Record<string, unknown>;

/** The warning a cloud-config render with a network carries. */
export const NETWORK_NOT_IN_USER_DATA =
  'spec.network is not in cloud-config user data: cloud-init reads network configuration from its datasource; a stored machine gets it as the NoCloud seed\'s network-config and the kernel argument network-config= (docs/network.md)';

/** The keys every kind of interface carries, in netplan's order. */
function l3(i: PlanInterface): Doc {
  return {
    ...(i.dhcp4 !== undefined ? { dhcp4: i.dhcp4 } : {}),
    ...(i.dhcp6 !== undefined ? { dhcp6: i.dhcp6 } : {}),
    ...(i.addresses.length ? { addresses: [...i.addresses] } : {}),
    ...(i.routes.length ? { routes: i.routes.map((r) => ({ to: r.to, via: r.via, ...(r.metric !== undefined ? { metric: r.metric } : {}) })) } : {}),
    ...(i.nameservers.length || i.search.length
      ? { nameservers: { ...(i.nameservers.length ? { addresses: [...i.nameservers] } : {}), ...(i.search.length ? { search: [...i.search] } : {}) } }
      : {}),
    ...(i.mtu !== undefined ? { mtu: i.mtu } : {}),
  };
}

/**
 * network-config v2 as an object: `version: 2`, then `ethernets`, `bonds`, `vlans`
 * (each only when it has interfaces), ids in the plan's order. Default routes are
 * written as CIDRs (`0.0.0.0/0`, `::/0`), which every cloud-init reads.
 */
export function networkConfigDocument(network: PlanNetwork): Doc {
  const group = (kind: PlanInterface['kind'], entry: (i: PlanInterface) => Doc): Doc | undefined => {
    const of = network.interfaces.filter((i) => i.kind === kind);
    return of.length ? Object.fromEntries(of.map((i) => [i.id, entry(i)])) : undefined;
  };
  const ethernets = group('ethernet', (i) => ({
    ...(i.match ? { match: { macaddress: i.match.mac } } : {}),
    ...(i.setName !== undefined ? { 'set-name': i.setName } : {}),
    ...l3(i),
  }));
  const bonds = group('bond', (i) => {
    const p = i.bondParameters;
    const parameters = p
      ? {
          ...(p.mode !== undefined ? { mode: p.mode } : {}),
          ...(p.miiMonitorInterval !== undefined ? { 'mii-monitor-interval': p.miiMonitorInterval } : {}),
          ...(p.lacpRate !== undefined ? { 'lacp-rate': p.lacpRate } : {}),
          ...(p.transmitHashPolicy !== undefined ? { 'transmit-hash-policy': p.transmitHashPolicy } : {}),
          ...(p.primary !== undefined ? { primary: p.primary } : {}),
        }
      : undefined;
    return { interfaces: [...(i.members ?? [])], ...(parameters ? { parameters } : {}), ...l3(i) };
  });
  const vlans = group('vlan', (i) => ({ id: i.vlanId, link: i.link, ...l3(i) }));
  return { version: 2, ...(ethernets ? { ethernets } : {}), ...(bonds ? { bonds } : {}), ...(vlans ? { vlans } : {}) };
}

/**
 * network-config v2 as YAML text through the one serializer (yaml/dump.ts), or the empty
 * document without a network (cloud-init then keeps its fallback, DHCP on the first NIC,
 * or the image's own setup: src/boot/nocloud.ts).
 */
export function renderNetworkConfig(network: PlanNetwork | undefined): string {
  return network ? dumpYaml(networkConfigDocument(network)) : '';
}
