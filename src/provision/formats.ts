/**
 * The payload formats bootwright serves, in server preference order (negotiation offers
 * them in this order, the first is the default). A new format is one line here and its
 * provisioners in `./registry.ts`.
 */
import { CLOUD_CONFIG_FORMAT } from './cloudinit/format.js';
import type { PayloadFormat } from './format.js';
import { IGNITION_FORMAT } from './ignition/format.js';

/** Every format, preferred first. */
export const FORMATS = [CLOUD_CONFIG_FORMAT, IGNITION_FORMAT] as const;

/** Their names: the values of `spec.output.format`, `?format=` and `--format`. */
export const OUTPUT_FORMATS = FORMATS.map((f) => f.name) as [(typeof FORMATS)[number]['name'], ...(typeof FORMATS)[number]['name'][]];

/** One of {@link OUTPUT_FORMATS}. */
export type OutputFormat = (typeof FORMATS)[number]['name'];

/** The format served when neither the request nor the client names one. */
export const DEFAULT_FORMAT: OutputFormat = FORMATS[0].name;

/** The format named `name`. */
export function formatNamed(name: OutputFormat): PayloadFormat<OutputFormat> {
  return FORMATS.find((f) => f.name === name)!;
}

/** The formats with a `version=` parameter. */
export const VERSIONED_FORMATS: readonly PayloadFormat[] = FORMATS.filter((f) => f.versions !== undefined);
