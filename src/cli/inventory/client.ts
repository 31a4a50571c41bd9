/**
 * The inventory commands' HTTP client: Node's fetch against a running service, with the
 * connection flags every verb shares (`--server`, `--token`, `--token-file`), and the
 * service's RFC 9457 problems turned into errors the CLI prints as
 * `Error from server (Title): detail` plus one `  field: message` line each, as kubectl
 * prints a Status.
 */
import { type ClientConfig, CLIENT_ENV, loadClientConfig } from '../../config.js';
import { PACKAGE_VERSION } from '../../version.js';
import type { Flag, Parsed } from '../commands.js';
import { printable } from './kinds.js';

/** The connection flags of every inventory command. */
export const CONNECTION_FLAGS: Flag[] = [
  { name: 'server', short: 's', type: 'string', value: 'URL', help: `the service's base URL (${CLIENT_ENV.url}; default http://127.0.0.1:8080)` },
  { name: 'token', type: 'string', value: 'TOKEN', help: `bearer token (${CLIENT_ENV.token})` },
  { name: 'token-file', type: 'string', value: 'FILE', help: `read the bearer token from FILE, e.g. DATA_DIR/admin-token (${CLIENT_ENV.tokenFile})` },
];

/** How long one request may take, milliseconds. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Retries of a request the service shed (429, 503 with Retry-After), as client-go retries them. */
const RETRIES = 2;
/** The longest Retry-After honoured, seconds: a longer one is reported, not waited out. */
const MAX_RETRY_AFTER_SECONDS = 10;

/** One problem of a problem document (`errors[]`). */
export interface ProblemField {
  path: string;
  message: string;
}

/**
 * The service answered a 4xx with a problem: the request was refused (CLI exit 3).
 * `status` is the HTTP status; `title`, `detail` and `errors` are the problem's.
 */
export class ServerRefusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly errors: ProblemField[],
  ) {
    super(`${title}: ${detail}`);
    this.name = 'ServerRefusal';
  }
}

/**
 * The service could not be reached, timed out, or failed (5xx): the request may not
 * have been done (CLI exit 4). The message names the URL and the cause, never the token.
 */
export class ServerUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerUnavailable';
  }
}

/** A shed answer (429 or 503 with Retry-After) that {@link InventoryClient.request} may retry. */
class Shed extends Error {
  constructor(
    readonly error: ServerRefusal | ServerUnavailable,
    readonly retryAfter: number,
  ) {
    super(error.message);
  }
}

/** A response: status, headers and the body as text. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON (undefined for an empty or non-JSON body). */
  json: unknown;
}

/**
 * The texts of a response's `Warning` headers (`299 - "text"`, RFC 7234 §5.5, as the
 * Kubernetes API sends its warnings), unescaped, in order.
 */
export function warningTexts(headers: Headers): string[] {
  const value = headers.get('warning');
  if (value === null) return [];
  return [...value.matchAll(/\d{3} \S+ "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1'));
}

/** A client of one service. */
export class InventoryClient {
  /**
   * @param warn called with the text of each `Warning` the service answers (kubectl
   *   prints them as `Warning: text` on standard error); none by default.
   */
  constructor(
    readonly config: ClientConfig,
    private readonly warn: (text: string) => void = () => undefined,
  ) {}

  /**
   * Send one request.
   *
   * @param path the path and query, e.g. `/v1/machines?limit=100`.
   * @param options.body a value sent as JSON; `options.headers` more headers;
   *   `options.allow` statuses (besides 2xx and 304) answered instead of thrown, e.g. 404.
   * @throws ServerRefusal for a 4xx not allowed (the problem's title, detail, errors);
   *   ServerUnavailable when the service cannot be reached, times out or answers 5xx.
   */
  async request(method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; allow?: number[] } = {}): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, path, options);
      } catch (e) {
        // Shed before any work was done (rate limit, overload, store unavailable): wait as told.
        const wait = e instanceof Shed ? e.retryAfter : undefined;
        if (wait === undefined || attempt >= RETRIES || wait > MAX_RETRY_AFTER_SECONDS) throw e instanceof Shed ? e.error : e;
        await new Promise((r) => setTimeout(r, wait * 1000));
      }
    }
  }

  private async once(method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; allow?: number[] }): Promise<Answer> {
    const url = `${this.config.server}${path}`;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': `bootwright/${PACKAGE_VERSION}`, ...options.headers };
    if (this.config.token !== undefined) headers.authorization = `Bearer ${this.config.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        redirect: 'error',
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why = (e as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (cause?.code ?? cause?.message ?? (e as Error).message);
      throw new ServerUnavailable(`cannot reach the service at ${this.config.server}: ${why}`);
    }
    const text = await response.text();
    for (const w of warningTexts(response.headers)) this.warn(w);
    const type = response.headers.get('content-type') ?? '';
    let json: unknown;
    if (/^application\/(problem\+)?json/.test(type) && text !== '') {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    const ok = (response.status >= 200 && response.status < 300) || response.status === 304 || options.allow?.includes(response.status);
    if (ok) return { status: response.status, headers: response.headers, text, json };
    const p = (json ?? {}) as { title?: unknown; detail?: unknown; errors?: unknown };
    const title = typeof p.title === 'string' ? p.title : response.statusText || `HTTP ${response.status}`;
    const detail = typeof p.detail === 'string' ? p.detail : text.slice(0, 200);
    const errors = Array.isArray(p.errors) ? (p.errors as ProblemField[]).filter((e) => typeof e.path === 'string' && typeof e.message === 'string') : [];
    const retry = response.headers.get('retry-after');
    const retryAfter = retry !== null && /^\d{1,6}$/.test(retry) ? Number(retry) : undefined;
    const error =
      response.status >= 500
        ? new ServerUnavailable(`the service answered ${response.status} (${title}): ${detail}${retry ? ` (Retry-After: ${retry} s)` : ''}`)
        : new ServerRefusal(response.status, title, detail, errors);
    if ((response.status === 429 || response.status === 503) && retryAfter !== undefined) throw new Shed(error, retryAfter);
    throw error;
  }

  /** GET a JSON document. @throws as {@link request} */
  async get<T>(path: string): Promise<T> {
    return (await this.request('GET', path)).json as T;
  }

  /**
   * Every item of a paged list (`metadata.continue`), following pages until the last.
   *
   * @param query extra query parameters (`labelSelector`).
   */
  async listAll<T>(collection: string, query: Record<string, string> = {}): Promise<T[]> {
    const items: T[] = [];
    let token: string | undefined;
    do {
      const params = new URLSearchParams({ ...query, limit: '1000', ...(token ? { continue: token } : {}) });
      const page = await this.get<{ items: T[]; metadata?: { continue?: string } }>(`/v1/${collection}?${params.toString()}`);
      items.push(...page.items);
      token = page.metadata?.continue;
    } while (token);
    return items;
  }
}

/**
 * The client for the connection flags of a parsed command line; with `err`, each warning
 * the service answers is printed there as `Warning: text`, as kubectl prints them.
 *
 * @throws ConfigError
 */
export function clientFrom(parsed: Parsed, env: NodeJS.ProcessEnv = process.env, err?: NodeJS.WritableStream): InventoryClient {
  const v = parsed.values;
  return new InventoryClient(
    loadClientConfig(
      {
        ...(typeof v.server === 'string' ? { server: v.server } : {}),
        ...(typeof v.token === 'string' ? { token: v.token } : {}),
        ...(typeof v['token-file'] === 'string' ? { tokenFile: v['token-file'] } : {}),
      },
      env,
    ),
    err ? (text) => void err.write(`Warning: ${printable(text)}\n`) : undefined,
  );
}

/**
 * Print a refusal as kubectl prints a server's Status: the title and detail, then each
 * field. A 401 (no token, or one the service does not know) ends with a hint naming
 * where a token comes from.
 */
export function printRefusal(e: ServerRefusal, err: NodeJS.WritableStream): void {
  // Every part is the service's, and may carry what a client on the boot network sent it.
  err.write(`Error from server (${printable(e.title)}): ${printable(e.detail)}\n`);
  for (const f of e.errors) err.write(`  ${f.path ? `${printable(f.path)}: ` : ''}${printable(f.message)}\n`);
  if (e.status === 401) {
    err.write(`hint: pass a token with --token-file FILE (or ${CLIENT_ENV.tokenFile}, ${CLIENT_ENV.token}); 'bootwright serve' writes an admin token to DATA_DIR/admin-token\n`);
  }
}
