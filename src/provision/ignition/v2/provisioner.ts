/** The Ignition 2.3 provisioner: Linux nodes with Ignition v0.x (older Flatcar), spec 2.3.0 (`./render.ts`). */
import { IGNITION_FORMAT } from '../format.js';
import type { Provisioner } from '../../provisioner.js';
import { renderIgnitionV2 } from './render.js';
import { legacySpecAtMost } from './version.js';

/** Ignition spec 2.3.0, for any requested 2.x spec ({@link legacySpecAtMost}); never chosen unasked. */
export const IGNITION_V2_PROVISIONER: Provisioner = {
  name: 'ignition-2.3',
  format: IGNITION_FORMAT,
  os: 'linux',
  default: false,
  serves: legacySpecAtMost,
  render(plan, { versionField }) {
    const out = renderIgnitionV2(plan, { versionField });
    return { body: out.body, version: out.version, warnings: out.warnings ?? [] };
  },
};
