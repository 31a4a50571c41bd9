/**
 * Plan NTP settings for systemd-timesyncd (timesyncd.conf(5)), the NTP client of Flatcar
 * Container Linux. Fedora CoreOS and RHCOS use chronyd instead, which ignores this
 * drop-in and is left alone; their Ignition users configure chrony with their own files.
 */
import type { PlanNtp } from '../plan/types.js';
import type { IgnitionFile, Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { generatedFile } from './files.js';

/** The drop-in written for `ntp.servers` (late in the order, so it wins over the image's). */
export const TIMESYNCD_DROPIN = '/etc/systemd/timesyncd.conf.d/90-bootwright.conf';
const DROPIN_MODE = 0o644;

/**
 * NTP as Ignition entries:
 * - `enabled: false` → nothing: bootwright configures no NTP client and the image's
 *   own time sync is left as it is (servers ignored). That is what cloud-init does with
 *   `ntp.enabled: false` (cc_ntp skips itself), so the request means the same in both
 *   formats (docs/requests.md, "NTP").
 * - servers (enabled true or unset) → {@link TIMESYNCD_DROPIN}, `[Time]` with `NTP=` (an
 *   empty assignment resets any earlier list) then `NTP=<servers, space-separated>`.
 * - no servers → nothing.
 *
 * Servers are checked by the plan (`checkPlan`: no whitespace or control characters).
 */
export function ntpEntries(ntp: PlanNtp | undefined, encoding: EncodeOptions): { files: Sourced<IgnitionFile>[] } {
  if (!ntp || ntp.enabled === false || ntp.servers.length === 0) return { files: [] };
  const text = `[Time]\nNTP=\nNTP=${ntp.servers.join(' ')}\n`;
  return { files: [generatedFile(TIMESYNCD_DROPIN, text, DROPIN_MODE, encoding, 'spec.provisioning.ntp.servers')] };
}
