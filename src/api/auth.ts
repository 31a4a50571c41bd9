/**
 * Bearer-token authentication with scopes (DESIGN §5). Tokens are kept and compared only
 * as SHA-256 hashes, in constant time; a token never reaches a log or an error.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Scope, TokenConfig } from '../config.js';

/** A known token: its name (for logs and metrics), hash and scopes. */
export interface Principal {
  name: string;
  scopes: ReadonlySet<Scope>;
}

interface KnownToken extends Principal {
  hash: Buffer;
}

// One-shot hashing (crypto.hash, Node 20.12): no Hash object per request.
const sha256 = (text: string) => hash('sha256', text, 'buffer');

/** Whether two strings are equal, in time that depends on their lengths only. */
function sameString(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** File, under the data directory, that holds the generated admin token. */
export const ADMIN_TOKEN_FILE = 'admin-token';

/**
 * The token table.
 *
 * `authenticate` hashes the presented token and compares it with every known hash using
 * `crypto.timingSafeEqual`, so the time taken does not depend on how much of a token
 * matched or on which entry matched.
 */
export class TokenTable {
  private readonly tokens: KnownToken[];
  /** Per connection: the last `Authorization` value that authenticated on it, and as whom. */
  private readonly lastOn = new WeakMap<object, { header: string; principal: Principal }>();

  constructor(tokens: readonly TokenConfig[]) {
    this.tokens = tokens.map((t) => ({
      name: t.name,
      scopes: new Set(t.scopes),
      hash: t.sha256 !== undefined ? Buffer.from(t.sha256, 'hex') : sha256(t.token!),
    }));
  }

  /** The principal for an `Authorization` header value, or undefined. */
  authenticate(authorization: string | undefined): Principal | undefined {
    const m = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i.exec(authorization ?? '');
    if (!m) return undefined;
    const presented = sha256(m[1]!);
    let found: KnownToken | undefined;
    for (const t of this.tokens) if (timingSafeEqual(presented, t.hash) && !found) found = t;
    return found;
  }

  /**
   * {@link authenticate} for a request on `connection` (its socket): a keep-alive client
   * sends the same header on every request, so a header equal to the last one that
   * authenticated on this connection is that principal again, without hashing (issue 15,
   * lean hit path: the hash was a twentieth of a cache hit). The comparison takes the
   * same time however much of the header matches, so a connection shared by several
   * clients (a proxy's) teaches one nothing of another's token but its length; any other
   * header is authenticated afresh.
   */
  authenticateOn(connection: object, authorization: string | undefined): Principal | undefined {
    if (authorization === undefined) return undefined;
    const last = this.lastOn.get(connection);
    if (last !== undefined && sameString(authorization, last.header)) return last.principal;
    const principal = this.authenticate(authorization);
    if (principal) this.lastOn.set(connection, { header: authorization, principal });
    return principal;
  }

  /**
   * The known tokens called `name`, each with the SHA-256 of the token: what a status-page
   * session binds to (src/api/session.ts), so that replacing or removing the token ends
   * its sessions. Never logged.
   */
  named(name: string): { principal: Principal; hash: Buffer }[] {
    return this.tokens.filter((t) => t.name === name).map((t) => ({ principal: t, hash: t.hash }));
  }

  /** The SHA-256 of a principal's token, when it is one of this table's (see {@link named}). */
  hashOf(principal: Principal): Buffer | undefined {
    return this.tokens.find((t) => t === principal)?.hash;
  }

  get size(): number {
    return this.tokens.length;
  }
}

/** Whether a principal holds a scope; `admin` holds every scope. */
export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes.has(scope) || principal.scopes.has('admin');
}

/**
 * With no token configured, make sure an admin token exists in the data directory:
 * read `<dataDir>/admin-token` if an earlier start wrote it, else write a new random one
 * (32 bytes, base64url) with mode 0600.
 *
 * @returns the token entry and the file's path (log the path, never the token).
 */
export function ensureAdminToken(dataDir: string): { token: TokenConfig; path: string; created: boolean } {
  const path = join(dataDir, ADMIN_TOKEN_FILE);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  let token: string;
  let created = false;
  try {
    token = readFileSync(path, 'utf8').trim();
  } catch {
    token = randomBytes(32).toString('base64url');
    writeFileSync(path, `${token}\n`, { mode: 0o600, flag: 'wx' });
    created = true;
  }
  return { token: { name: 'generated-admin', token, scopes: ['admin'] }, path, created };
}
