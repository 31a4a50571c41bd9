/**
 * Tests that need what a clone may lack (a tool, data, a second runtime): outside CI
 * they skip with one loud line; under CI they run, and fail on what is missing.
 */

/** Whether `CI` is set to something other than empty, `0` or `false`. */
export const inCI: boolean = ((v) => v !== undefined && v !== '' && v !== '0' && v.toLowerCase() !== 'false')(process.env.CI);

const warned = new Set<string>();

/**
 * A test dependency the clone lacks. Outside CI: print one loud line per process and
 * return it, for node:test's `skip` option. Under CI: return false, so the test runs
 * and fails on the missing dependency with its own message.
 *
 * @param what the missing thing and what goes unchecked without it
 * @returns the skip reason, or false (run the test)
 */
export function missingDependency(what: string): string | false {
  if (inCI) return false;
  const line = `*** SKIPPED: ${what} ***`;
  if (!warned.has(line)) {
    warned.add(line);
    process.stderr.write(`\n${line}\n\n`);
  }
  return line;
}

