/**
 * The legacy Ignition spec 2.3.0 (Container Linux era Ignition v0.x, older Flatcar) and
 * which requested versions it answers (DESIGN §3, §4).
 *
 * Ignition accepts a config only when its major version equals the spec it speaks and its
 * version is at or below that spec (coreos/ignition `docs/configuration-v2_3.md`
 * "version": "Compatibility requires the major versions to match and the spec version be
 * less than or equal to the latest version"). bootwright writes exactly one 2.x spec.
 * What Ignition v0.x *advertises* lags what it reads: from the release that stabilised
 * spec 2.3.0 until coreos/ignition#942 (2020) it still sent `version=2.2.0` in `Accept`,
 * and later releases send `version=2.4.0`. Those v0.31–v0.34 releases are the Ignition of
 * the older Flatcar this spec is for. So any 2.x request gets 2.3.0 (as the Cluster API
 * issue asks: "an Accept header advertising version=2.x"): an Ignition old enough to read
 * only 2.0–2.2 could not use anything bootwright writes, refused or not.
 */

/** The one 2.x spec bootwright writes. */
export const LEGACY_IGNITION_SPEC = '2.3.0';

/** {@link LEGACY_IGNITION_SPEC} as a type. */
export type LegacyIgnitionSpecVersion = typeof LEGACY_IGNITION_SPEC;

const REQUESTED = /^(\d+)\.\d+(?:\.\d+)?(?:-experimental)?$/;

/**
 * The 2.x spec to answer a request for `requested` with: `2.3.0` when `requested` is a
 * 2.x version, else undefined.
 *
 * `requested` is `MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, optionally with `-experimental`.
 * Examples:
 * `2.3.0`→`2.3.0`, `2.3`→`2.3.0`, `2.3.1`→`2.3.0`, `2.4.0`→`2.3.0`,
 * `2.4.0-experimental`→`2.3.0`, `2.2.0`→`2.3.0`, `2.0.0`→`2.3.0`, `1`→undefined,
 * `3.0.0`→undefined (a 3.x spec, see `highestSpecAtMost`).
 */
export function legacySpecAtMost(requested: string): LegacyIgnitionSpecVersion | undefined {
  const m = REQUESTED.exec(requested.trim());
  if (!m || Number(m[1]) !== 2) return undefined;
  return LEGACY_IGNITION_SPEC;
}
