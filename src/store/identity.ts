/**
 * Hardware identity as the store indexes it: the same machine's MAC address, UUID, serial
 * or host name, however spelled, is one index key. Normalisation is src/boot's, the same
 * code that reads what firmware sends, so what an operator writes and what a machine
 * reports always meet.
 */
import { normaliseHostname, normaliseMac, normaliseSerial, normaliseUuid } from '../boot/identity.js';
import { InvalidArgumentError } from './errors.js';

export { normaliseMac, normaliseUuid } from '../boot/identity.js';
import type { MachineSpec } from './resources.js';

/** What a booting machine reports about itself; every field optional. */
export interface MachineIdentity {
  /** A MAC address in colon, hyphen, Cisco-dot or bare 12-hex form, any case. */
  mac?: string;
  /** SMBIOS system UUID, any case, hyphenated or 32 hex digits. */
  uuid?: string;
  /** SMBIOS serial number, compared exactly but for surrounding white space. */
  serial?: string;
  /** Host name, compared case-insensitively (RFC 4343). */
  hostname?: string;
}

/** Index selector kinds. Free labels are indexed as `label` with the value `key=value`. */
export type SelectorKind = 'mac' | 'uuid' | 'serial' | 'hostname' | 'label';

/** One index row: a selector value that selects a machine. */
export interface SelectorEntry {
  selector: SelectorKind;
  value: string;
  /** The machine field it came from (`spec.selectors.mac[1]`), for errors. */
  field?: string;
}

/** Selector kinds that name one piece of hardware: no two machines may share a value. */
export const HARDWARE_SELECTORS: readonly SelectorKind[] = ['mac', 'uuid', 'serial'];

/** The entries of {@link HARDWARE_SELECTORS}, in a fixed order (selector, then value): the order locks are taken in. */
export function hardwareEntries(entries: readonly SelectorEntry[]): SelectorEntry[] {
  return entries.filter((e) => HARDWARE_SELECTORS.includes(e.selector)).sort((a, b) => (a.selector + '\n' + a.value < b.selector + '\n' + b.value ? -1 : 1));
}

/**
 * The index entries of a machine's selectors: each MAC (normalised, deduplicated: the
 * first spelling's field is kept), the UUID, serial and host name, and each free label
 * as `key=value`; MAC, UUID and serial entries carry the field they came from.
 *
 * @throws InvalidArgumentError naming `spec.selectors.mac[i]` or `spec.selectors.uuid`
 *   for a value that is not a MAC address or UUID.
 */
export function selectorEntries(spec: MachineSpec): SelectorEntry[] {
  const entries = new Map<string, SelectorEntry>();
  const add = (selector: SelectorKind, value: string, field?: string) => {
    const key = `${selector}\n${value}`;
    if (!entries.has(key)) entries.set(key, { selector, value, ...(field !== undefined ? { field } : {}) });
  };
  spec.selectors.mac.forEach((mac, i) => {
    const normal = normaliseMac(mac);
    if (normal === undefined) throw new InvalidArgumentError(`spec.selectors.mac[${i}]`, 'must be a MAC address such as aa:bb:cc:dd:ee:ff');
    add('mac', normal, `spec.selectors.mac[${i}]`);
  });
  if (spec.selectors.uuid !== undefined) {
    const normal = normaliseUuid(spec.selectors.uuid);
    if (normal === undefined) throw new InvalidArgumentError('spec.selectors.uuid', 'must be a UUID such as 4c4c4544-0042-3510-8052-b4c04f4e3232');
    add('uuid', normal, 'spec.selectors.uuid');
  }
  const serial = spec.selectors.serial === undefined ? undefined : normaliseSerial(spec.selectors.serial);
  if (serial !== undefined) add('serial', serial, 'spec.selectors.serial');
  const hostname = spec.selectors.hostname === undefined ? undefined : normaliseHostname(spec.selectors.hostname);
  if (hostname !== undefined) add('hostname', hostname);
  for (const [key, value] of Object.entries(spec.selectors.labels)) add('label', `${key}=${value}`);
  return [...entries.values()];
}

/**
 * The index entries a booting machine's identity looks up. Values that cannot be a MAC
 * or UUID select nothing (they are dropped, not an error: firmware sends what it has).
 */
export function identityEntries(identity: MachineIdentity & { labels?: Record<string, string> }): SelectorEntry[] {
  const out: SelectorEntry[] = [];
  const mac = identity.mac === undefined ? undefined : normaliseMac(identity.mac);
  if (mac !== undefined) out.push({ selector: 'mac', value: mac });
  const uuid = identity.uuid === undefined ? undefined : normaliseUuid(identity.uuid);
  if (uuid !== undefined) out.push({ selector: 'uuid', value: uuid });
  const serial = identity.serial === undefined ? undefined : normaliseSerial(identity.serial);
  if (serial !== undefined) out.push({ selector: 'serial', value: serial });
  const hostname = identity.hostname === undefined ? undefined : normaliseHostname(identity.hostname);
  if (hostname !== undefined) out.push({ selector: 'hostname', value: hostname });
  for (const [key, value] of Object.entries(identity.labels ?? {})) out.push({ selector: 'label', value: `${key}=${value}` });
  return out;
}

/**
 * A discovered machine's identity as stored: MAC and UUID normalised, absent fields as
 * the empty string (so the four together are one unique key).
 *
 * @throws InvalidArgumentError naming `mac` or `uuid` when given but not parseable, or
 *   when no field is given at all.
 */
export function discoveredKey(identity: MachineIdentity): Required<MachineIdentity> {
  let mac = '';
  if (identity.mac !== undefined && identity.mac !== '') {
    mac = normaliseMac(identity.mac) ?? '';
    if (mac === '') throw new InvalidArgumentError('mac', 'must be a MAC address such as aa:bb:cc:dd:ee:ff');
  }
  let uuid = '';
  if (identity.uuid !== undefined && identity.uuid !== '') {
    uuid = normaliseUuid(identity.uuid) ?? '';
    if (uuid === '') throw new InvalidArgumentError('uuid', 'must be a UUID');
  }
  const serial = normaliseSerial(identity.serial ?? '') ?? '';
  const hostname = normaliseHostname(identity.hostname ?? '') ?? '';
  if (!mac && !uuid && !serial && !hostname) throw new InvalidArgumentError('identity', 'give at least one of mac, uuid, serial, hostname');
  return { mac, uuid, serial, hostname };
}
