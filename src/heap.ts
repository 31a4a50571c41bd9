/**
 * V8 heap settings for the `bootwright` process, applied when this module is evaluated:
 * the CLI imports it before anything else (src/cli.ts), so they hold before the service's
 * modules allocate anything. V8's flags are per process, so the render pool's worker
 * threads have them too.
 *
 * `--no-allocation-site-pretenuring` (issue 15, lean hit path): V8 counts, per allocation
 * site, how many of its objects survive a young-generation collection, and from a
 * survival rate of 85 % on allocates that site's objects in the old generation directly
 * ("pretenuring", V8's `AllocationSite` feedback). A service that is busy at start
 * (loading its routes while requests queue, a boot storm's first renders) keeps every
 * in-flight request alive through a collection or two, so the sites that make a
 * request's objects can be pretenured, and from then on every request's garbage lands
 * in the old generation: measured on `POST /v1/render` cache hits, one fresh process in
 * two to three took 6-10 ms per scavenge (old-to-young pointers to scan) against 0.5-1
 * ms, grew its heap 3 MB a scavenge until a full collection, and spent 8-13 µs per hit
 * in the collector against under 1 µs. A request's objects live for milliseconds; what
 * lives long here (the caches, the store's statements) is little, so young allocation
 * for everything costs nothing measurable.
 */
import { setFlagsFromString } from 'node:v8';

/** The V8 flags set, in V8's own spelling. */
export const V8_FLAGS = ['--no-allocation-site-pretenuring'] as const;

for (const flag of V8_FLAGS) setFlagsFromString(flag);
