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
