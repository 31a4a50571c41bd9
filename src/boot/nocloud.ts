/**
 * The small NoCloud documents served next to user data under
 * `/nocloud/<id>/<exp>/<sig>/` (issue 4; sign.ts for the URL shape). cloud-init's
 * `DataSourceNoCloud` fetches `meta-data`, `user-data` and `vendor-data` from the seed
 * URL (`util.read_seeded`), and from 24.x also `network-config`.
 */
import { renderNetworkConfig } from '../provision/cloudinit/network.js';
import { planNetwork } from '../provision/plan/network.js';
import type { NetworkInput } from '../request/network.js';
import { dumpYaml } from '../yaml/dump.js';

/**
 * `meta-data`: YAML with `instance-id` and, when given, `local-hostname` (the keys
 * cloud-init's NoCloud documentation lists; cloud-init sets the host name from the
 * latter).
 *
 * Keep `instanceId` stable for a machine (its id, not a revision): cloud-init treats a
 * new instance id as a new instance and runs its once-per-instance modules again, which
 * for a node that already joined means running kubeadm a second time.
 *
 * @param instanceId the instance id, non-empty
 * @param hostname the host name to set, if any
 * @returns YAML text through the one serializer (yaml/dump.ts), ending in a newline
 * @throws TypeError when `instanceId` is empty
 */
export function metaData(instanceId: string, hostname?: string): string {
  if (instanceId.trim() === '') throw new TypeError('instanceId must not be empty');
  return dumpYaml({ 'instance-id': instanceId, 'local-hostname': hostname });
}

/**
 * `vendor-data`: empty. cloud-init skips empty vendor data ("no vendordata from
 * datasource", `Init._consume_vendordata` in `stages.py`); answering 200 with nothing
 * rather than 404 avoids its retries (`read_seeded` fetches with retries).
 */
export function vendorData(): string {
  return '';
}

/**
 * `network-config`: the machine's network (its own `spec.network`, else its profile's) as
 * network-config v2 (src/provision/cloudinit/network.ts), the same document `/ipxe` puts
 * on the kernel command line. Without one, empty, meaning "no network configuration":
 * cloud-init loads it as YAML, an empty document gives none (`util.load_yaml` returns
 * its default for an empty string), and cloud-init keeps its fallback (DHCP on the first
 * NIC) or the image's own network setup. A 404 here would cost cloud-init 24.x a round
 * of retries before going on.
 *
 * @param network validated by `networkSchema`
 */
export function networkConfig(network: NetworkInput | undefined): string {
  return renderNetworkConfig(planNetwork(network));
}
