/**
 * Allowed hosts (`BOOTWRIGHT_ALLOWED_HOSTS`), against DNS rebinding: a page on another
 * origin whose name an attacker re-points at the service's address can make a browser
 * on the boot network send requests that the browser treats as that origin's, and read
 * the answers (an `/ipxe` script carries a signed URL). Such requests name the
 * attacker's host in `Host` (RFC 9110 §7.2), so a service that knows its own names
 * answers anything else with `421 Misdirected Request` (RFC 9110 §15.5.20).
 */
import { isIP } from 'node:net';

/** Routes answered whatever the Host: probes and scrapers address a pod or node by IP, and these carry no secret. */
export const ANY_HOST_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** A host name (RFC 1123 labels), `*.` followed by one (any subdomain of it), or an IP address. */
const PATTERN = /^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/**
 * Whether `entry` is a valid `allowedHosts` entry: a host name, `*.name`, or an IPv4 or
 * IPv6 address (without brackets or port), in lower case.
 */
export function isAllowedHostEntry(entry: string): boolean {
  return isIP(entry) !== 0 || PATTERN.test(entry);
}

/**
 * The host of a `Host` header value (RFC 9110 §7.2: `uri-host [":" port]`): the name or
 * address without its port, IPv6 without brackets, lower case, a trailing dot dropped.
 * Undefined for an empty value.
 */
export function hostOf(header: string): string | undefined {
  let host = header.trim().toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    host = end < 0 ? host.slice(1) : host.slice(1, end);
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0 && host.indexOf(':') === colon) host = host.slice(0, colon);
  }
  host = host.replace(/\.$/, '');
  return host === '' ? undefined : host;
}

/**
 * Whether a request's `Host` names one of `allowed` ({@link isAllowedHostEntry}):
 * exactly, or as a subdomain of a `*.name` entry (`*.boot.example` allows
 * `a.boot.example`, not `boot.example`). Ports are not compared: the service answers on
 * several (HTTPS and the plain listener).
 *
 * @param header the `Host` header as received (undefined when absent: never allowed)
 * @param allowed the configured entries; callers skip the check when there are none
 */
export function hostAllowed(header: string | undefined, allowed: readonly string[]): boolean {
  const host = header === undefined ? undefined : hostOf(header);
  if (host === undefined) return false;
  return allowed.some((entry) => (entry.startsWith('*.') ? host.endsWith(entry.slice(1)) && host.length > entry.length - 1 : host === entry));
}
