/**
 * Hardware identity as the store indexes it: the minimal normalisation that makes the
 * same machine's MAC address or UUID, however spelled, one index key. Internal to
 * src/store (the boot code keeps its own, richer parser for what firmware sends).
 */
import { InvalidArgumentError } from './errors.js';
import type { MachineSpec } from './resources.js';

/** What a booting machine reports about itself; every field optional. */
export interface MachineIdentity {
  /** A MAC address in colon, hyphen, Cisco-dot or bare 12-hex form, any case. */
  mac?: string;
  /** SMBIOS system UUID, any case, hyphenated or 32 hex digits. */
  uuid?: string;
  /** SMBIOS serial number, compared exactly. */
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
}

const MAC_FORMS = [
  /^([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})$/,
  /^([0-9a-f]{2})([0-9a-f]{2})\.([0-9a-f]{2})([0-9a-f]{2})\.([0-9a-f]{2})([0-9a-f]{2})$/,
  /^([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/,
];

/**
 * A 48-bit MAC address (IEEE 802) in lower-case colon form, `aa:bb:cc:dd:ee:ff`.
 *
 * @param mac colon (`AA:BB:…`), hyphen (`aa-bb-…`, iPXE `${mac:hexhyp}`), Cisco dot
 *   (`aabb.ccdd.eeff`) or bare (`aabbccddeeff`) form, any case; one separator style.
 * @returns the normalised address, or undefined when `mac` is none of these.
 */
export function normaliseMac(mac: string): string | undefined {
  const text = mac.trim().toLowerCase();
  for (const form of MAC_FORMS) {
    const m = form.exec(text);
    if (!m) continue;
    if (form === MAC_FORMS[0] && new Set(text.replace(/[0-9a-f]/g, '')).size !== 1) return undefined;
    return m.slice(1, 7).join(':');
  }
  return undefined;
}

/**
 * An SMBIOS system UUID (RFC 9562 text form) in lower case with hyphens.
 *
 * @param uuid 8-4-4-4-12 hex digits or 32 bare hex digits, any case.
 * @returns the normalised UUID, or undefined when `uuid` is neither.
 */
export function normaliseUuid(uuid: string): string | undefined {
  const text = uuid.trim().toLowerCase();
  const m = /^([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})$/.exec(text);
  if (!m || (text.includes('-') && text.length !== 36)) return undefined;
  return m.slice(1, 6).join('-');
}

/** Host names compare case-insensitively (RFC 4343): lower case. */
export function normaliseHostname(hostname: string): string {
  return hostname.toLowerCase();
}

/**
 * The index entries of a machine's selectors: each MAC (normalised, deduplicated),
 * the UUID, serial and host name, and each free label as `key=value`.
 *
 * @throws InvalidArgumentError naming `spec.selectors.mac[i]` or `spec.selectors.uuid`
 *   for a value that is not a MAC address or UUID.
 */
export function selectorEntries(spec: MachineSpec): SelectorEntry[] {
  const entries = new Map<string, SelectorEntry>();
  const add = (selector: SelectorKind, value: string) => entries.set(`${selector}\n${value}`, { selector, value });
  spec.selectors.mac.forEach((mac, i) => {
    const normal = normaliseMac(mac);
    if (normal === undefined) throw new InvalidArgumentError(`spec.selectors.mac[${i}]`, 'must be a MAC address such as aa:bb:cc:dd:ee:ff');
    add('mac', normal);
  });
  if (spec.selectors.uuid !== undefined) {
    const normal = normaliseUuid(spec.selectors.uuid);
    if (normal === undefined) throw new InvalidArgumentError('spec.selectors.uuid', 'must be a UUID such as 4c4c4544-0042-3510-8052-b4c04f4e3232');
    add('uuid', normal);
  }
  if (spec.selectors.serial !== undefined) add('serial', spec.selectors.serial);
  if (spec.selectors.hostname !== undefined) add('hostname', normaliseHostname(spec.selectors.hostname));
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
  if (identity.serial !== undefined && identity.serial !== '') out.push({ selector: 'serial', value: identity.serial });
  if (identity.hostname !== undefined && identity.hostname !== '') out.push({ selector: 'hostname', value: normaliseHostname(identity.hostname) });
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
  const serial = identity.serial ?? '';
  const hostname = normaliseHostname(identity.hostname ?? '');
  if (!mac && !uuid && !serial && !hostname) throw new InvalidArgumentError('identity', 'give at least one of mac, uuid, serial, hostname');
  return { mac, uuid, serial, hostname };
}
