/**
 * Plan NTP settings for systemd-timesyncd (timesyncd.conf(5)), the NTP client of Flatcar
 * Container Linux. Fedora CoreOS and RHCOS use chronyd instead, which ignores this
 * drop-in and is left alone; their Ignition users configure chrony with their own files.
 */
import type { FieldProblem } from '../../errors.js';
import type { PlanNtp } from '../plan/types.js';
import type { IgnitionFile, IgnitionUnit, Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { generatedFile } from './files.js';

/** The drop-in written for `ntp.servers` (late in the order, so it wins over the image's). */
export const TIMESYNCD_DROPIN = '/etc/systemd/timesyncd.conf.d/90-bootwright.conf';
/** The unit masked for `ntp.enabled: false`. */
export const TIMESYNCD_UNIT = 'systemd-timesyncd.service';
const DROPIN_MODE = 0o644;

/**
 * NTP as Ignition entries:
 * - `enabled: false` → `systemd-timesyncd.service` masked (servers ignored). Masking
 *   rather than `enabled: false`: it works where the unit does not exist (disabling a
 *   missing unit fails on Ignition before 2.16 with systemd ≥ 252) and keeps timesyncd
 *   from being started by `timedatectl set-ntp`. Cloud-init's own `ntp.enabled: false`
 *   only skips its module; Ignition has no "leave it" that would also honour the intent.
 * - servers (enabled true or unset) → {@link TIMESYNCD_DROPIN}, `[Time]` with `NTP=` (an
 *   empty assignment resets any earlier list) then `NTP=<servers, space-separated>`.
 * - no servers → nothing.
 *
 * Problems (pushed): a server with whitespace or control characters, which would split or
 * end the setting, at `spec.provisioning.ntp.servers[i]`.
 */
export function ntpEntries(ntp: PlanNtp | undefined, encoding: EncodeOptions, problems: FieldProblem[]): { files: Sourced<IgnitionFile>[]; units: Sourced<IgnitionUnit>[] } {
  if (!ntp) return { files: [], units: [] };
  if (ntp.enabled === false) return { files: [], units: [{ entry: { name: TIMESYNCD_UNIT, mask: true }, origin: 'spec.provisioning.ntp.enabled' }] };
  if (ntp.servers.length === 0) return { files: [], units: [] };
  let ok = true;
  for (const [i, server] of ntp.servers.entries()) {
    if (server === '' || /[\s\x00-\x1f\x7f]/.test(server)) {
      problems.push({ path: `spec.provisioning.ntp.servers[${i}]`, message: 'must be a host name or address without whitespace' });
      ok = false;
    }
  }
  if (!ok) return { files: [], units: [] };
  const text = `[Time]\nNTP=\nNTP=${ntp.servers.join(' ')}\n`;
  return { files: [generatedFile(TIMESYNCD_DROPIN, text, DROPIN_MODE, encoding, 'spec.provisioning.ntp.servers')], units: [] };
}
