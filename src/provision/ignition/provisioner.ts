/** The Ignition 3.x provisioner: Linux nodes, specs 3.0.0–3.6.0 (`./render.ts`). */
import { USER_DATA_LIMITS } from '../../platform.js';
import type { Provisioner } from '../provisioner.js';
import { IGNITION_FORMAT } from './format.js';
import { renderIgnition } from './render.js';
import { compareSpecs, highestSpecAtMost, type IgnitionSpecVersion } from './versions.js';

/** The first Ignition spec that decompresses `data:` URLs (`compression: gzip`). */
const GZIP_SPEC: IgnitionSpecVersion = '3.1.0';

/**
 * Ignition 3.x. A requested spec gives the highest served 3.x spec not above it
 * ({@link highestSpecAtMost}); unasked, the lowest spec that can express the config, and
 * when that is below 3.1.0 and the config is over the platform's user data limit, 3.1.0,
 * whose `data:` URLs Ignition decompresses (so file contents may be gzipped).
 */
export const IGNITION_PROVISIONER: Provisioner = {
  name: 'ignition',
  format: IGNITION_FORMAT,
  os: 'linux',
  default: true,
  serves: highestSpecAtMost,
  render(plan, { version, versionField, platform }) {
    let out = renderIgnition(plan, version ? { version: version as IgnitionSpecVersion, versionField } : {});
    if (version === undefined && platform && Buffer.byteLength(out.body, 'utf8') > USER_DATA_LIMITS[platform].bytes && compareSpecs(out.version, GZIP_SPEC) < 0) {
      out = renderIgnition(plan, { version: GZIP_SPEC, versionField });
    }
    return { body: out.body, version: out.version, warnings: out.warnings ?? [] };
  },
};
