/**
 * Version of the renderers' output. Part of every render-cache key and ETag input: bump
 * it whenever a renderer's bytes change for the same input, so no cache serves old
 * bytes as new. Goldens (`test/golden/`) catch a change that forgot to bump it.
 */
export const RENDERER_VERSION = '1';
