/**
 * Versions: of the renderers' output, and of the package.
 */
import { readFileSync } from 'node:fs';

/**
 * Version of the renderers' output. Part of every render-cache key: bump
 * it whenever a renderer's bytes change for the same input, so no cache serves old
 * bytes as new. `test/golden/LOCK` pins it to the goldens: a golden change without a
 * bump fails the golden test.
 */
export const RENDERER_VERSION = '4';

/**
 * The package's version (`package.json` `version`, semver), as `bootwright --version`
 * prints it. Read once at load from the package root, which is the parent of both
 * `src/` and `dist/`.
 */
export const PACKAGE_VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
