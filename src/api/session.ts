/**
 * Status-page sessions (`/ui`): what the cookie holds instead of the API token. Signing
 * in with a token issues a session, a signed value naming the token (by its name, bound
 * to its SHA-256) with a random id and an expiry; the token itself never leaves the
 * sign-in form. Nothing is stored: replicas sharing the URL-signing key share sessions,
 * and an unauthenticated client can make the service write nothing.
 *
 * Cookie value: `<sid>.<exp>.<name>.<mac>`, with `sid` 16 random bytes (base64url), `exp`
 * unix seconds, `name` the token's name (base64url of its UTF-8), and `mac` base64url
 * HMAC-SHA256 under the URL-signing key over `ui-session\nsid\nexp\nname\n<token sha256 hex>`.
 * A session ends at `exp`, when the token is replaced or removed from the configuration
 * (its hash no longer matches), or when the key changes. Signing out clears the cookie.
 *
 * The form token of a session (CSRF, src/api/routes/ui.ts) is derived from its `sid`, so
 * it changes at every sign-in rather than living as long as the API token.
 */
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal, TokenTable } from './auth.js';

/** A signed-in session: whose, and the id its form token derives from. */
export interface Session {
  principal: Principal;
  /** The session id (for a bearer header: derived from the token's hash). */
  sid: string;
}

function mac(key: Buffer, sid: string, exp: string, name: string, tokenHash: Buffer): string {
  return createHmac('sha256', key).update(`ui-session\n${sid}\n${exp}\n${name}\n${tokenHash.toString('hex')}`, 'utf8').digest('base64url');
}

/**
 * Issue a session for `principal` (a token of `tokens` that just authenticated).
 *
 * @param key the URL-signing key
 * @param lifetimeSeconds how long the session lasts, seconds
 * @param now unix seconds
 * @returns the cookie value
 * @throws TypeError when `principal` is not one of `tokens`
 */
export function issueSession(key: Buffer, tokens: TokenTable, principal: Principal, lifetimeSeconds: number, now: number = Date.now() / 1000): string {
  const tokenHash = tokens.hashOf(principal);
  if (tokenHash === undefined) throw new TypeError('the principal is not a known token');
  const sid = randomBytes(16).toString('base64url');
  const exp = String(Math.floor(now) + lifetimeSeconds);
  const name = Buffer.from(principal.name, 'utf8').toString('base64url');
  return `${sid}.${exp}.${name}.${mac(key, sid, exp, principal.name, tokenHash)}`;
}

/**
 * The session a cookie value names, when it is genuine, unexpired and its token is still
 * configured; undefined otherwise (any malformed value included). The MAC is compared in
 * constant time. Never throws.
 */
export function verifySession(key: Buffer, tokens: TokenTable, value: string, now: number = Date.now() / 1000): Session | undefined {
  const m = /^([A-Za-z0-9_-]{22})\.(0|[1-9][0-9]{0,14})\.([A-Za-z0-9_-]{1,400})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!m) return undefined;
  const [, sid, exp, encodedName, given] = m as unknown as [string, string, string, string, string];
  if (now >= Number(exp)) return undefined;
  const name = Buffer.from(encodedName, 'base64url').toString('utf8');
  const presented = Buffer.from(given, 'ascii');
  for (const { principal, hash: tokenHash } of tokens.named(name)) {
    const expected = Buffer.from(mac(key, sid, exp, name, tokenHash), 'ascii');
    if (timingSafeEqual(presented, expected)) return { principal, sid };
  }
  return undefined;
}

/** The session of a request authenticated by a bearer header: its id derives from the token, never shown. */
export function bearerSession(principal: Principal, token: string): Session {
  return { principal, sid: hash('sha256', `ui-bearer\n${token}`, 'base64url') };
}
