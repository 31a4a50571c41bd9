/**
 * Version of the renderers' output. Part of every render-cache key: bump
 * it whenever a renderer's bytes change for the same input, so no cache serves old
 * bytes as new. `test/golden/LOCK` pins it to the goldens: a golden change without a
 * bump fails the golden test.
 */
export const RENDERER_VERSION = '1';
