/**
 * `Accept: application/yaml` on the inventory routes (issue 14): the document a route
 * answers as JSON is sent as YAML instead when the client prefers YAML (RFC 9110
 * §12.5.1: the highest q-value among the types offered, JSON on a tie or a wildcard).
 * Problems stay `application/problem+json` (RFC 9457 §3), whatever Accept says.
 */
import type { FastifyInstance } from 'fastify';
import { dumpYaml } from '../yaml/dump.js';
import { parseAccept } from './negotiate.js';

/** The YAML media type of responses (RFC 9512). */
export const YAML_MEDIA_TYPE = 'application/yaml';

/** Media types read as YAML in Accept. */
const YAML_TYPES = new Set([YAML_MEDIA_TYPE, 'application/x-yaml', 'text/yaml']);

/**
 * The q-value an Accept header gives a media type: that of the most specific range
 * matching it (RFC 9110 §12.5.1: exact, then `type/*`, then `*\/*`), 0 when none does.
 */
function qualityOf(ranges: ReturnType<typeof parseAccept>, mediaType: string): number {
  const [type, subtype] = mediaType.split('/');
  let best = -1;
  let q = 0;
  for (const r of ranges) {
    const specificity = r.type === type && r.subtype === subtype ? 3 : r.type === type && r.subtype === '*' ? 2 : r.type === '*' && r.subtype === '*' ? 1 : 0;
    if (specificity > best && specificity > 0) {
      best = specificity;
      q = r.q;
    }
  }
  return q;
}

/**
 * Whether an Accept header prefers YAML to JSON: some YAML type (`application/yaml`,
 * `application/x-yaml`, `text/yaml`) has a higher q-value than `application/json`
 * ({@link qualityOf}); a tie, a wildcard alone or no header is JSON.
 */
export function prefersYaml(accept: string | undefined): boolean {
  if (accept === undefined || accept === '') return false;
  const ranges = parseAccept(accept);
  const yaml = Math.max(...[...YAML_TYPES].map((t) => qualityOf(ranges, t)));
  return yaml > qualityOf(ranges, 'application/json');
}

/**
 * Register, in `app`'s encapsulation context, the hook that sends a 2xx JSON answer as
 * YAML when the request prefers it ({@link prefersYaml}); such answers carry
 * `Vary: Accept`. The JSON text the route's serializer wrote is parsed back and dumped
 * through the project's one YAML serializer (src/yaml/dump.ts).
 */
export function yamlResponses(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    const type = String(reply.getHeader('content-type') ?? '');
    if (reply.statusCode < 200 || reply.statusCode >= 300 || !type.startsWith('application/json')) {
      done(null, payload);
      return;
    }
    void reply.header('vary', 'Accept');
    if (typeof payload !== 'string' || !prefersYaml(request.headers.accept)) {
      done(null, payload);
      return;
    }
    void reply.type(`${YAML_MEDIA_TYPE}; charset=utf-8`);
    done(null, dumpYaml(JSON.parse(payload)));
  });
}
