/**
 * Run a snippet of Python against the installed cloud-init's own modules (Debian's
 * cloud-init 22.4 in /usr/lib/python3/dist-packages), so boot tests check bootwright's
 * NoCloud and include documents with the code that will read them: `util.read_seeded`,
 * `DataSourceNoCloud.load_cmdline_data`, `UserDataProcessor`.
 *
 * Without cloud-init's Python package: in CI (`CI` set) the tests fail; elsewhere they
 * skip with a loud note.
 */
import { execFile, spawnSync } from 'node:child_process';
import { inCI } from '../support/missing.js';

const PYTHON = '/usr/bin/python3';

/** Whether `import cloudinit` works with the system Python. */
export const haveCloudInitPython: boolean = spawnSync(PYTHON, ['-c', 'import cloudinit.util'], { stdio: 'ignore' }).status === 0;

/** The reason to skip a test needing cloud-init's Python, or false to run it; throws in CI without it. */
export function skipWithoutCloudInit(): string | false {
  if (haveCloudInitPython) return false;
  if (inCI) throw new Error('cloud-init (python3 module cloudinit) is required in CI: apt-get install -y cloud-init');
  process.stderr.write('\n*** SKIPPED: cloud-init python module not installed; NoCloud and #include checks against cloud-init NOT run ***\n\n');
  return 'cloud-init python module not installed';
}

/**
 * Run `code` with `python3 -c`, the JSON-encoded `input` on stdin, and parse its stdout
 * as JSON. Asynchronous, so an HTTP server in this process can answer cloud-init.
 * Proxy variables are removed (cloud-init's `requests` would honour them).
 */
export async function runPython<T>(code: string, input: unknown): Promise<T> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(https?|no|all)_proxy$/i.test(k)));
  return new Promise<T>((resolve, reject) => {
    const child = execFile(PYTHON, ['-c', code], { env: { ...env, LANG: 'C.UTF-8', PYTHONIOENCODING: 'utf-8' }, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`python failed: ${error.message}\n${stderr}`));
        return;
      }
      try {
        resolve(JSON.parse(stdout) as T);
      } catch {
        reject(new Error(`python printed no JSON:\n${stdout}\n${stderr}`));
      }
    });
    child.stdin?.end(JSON.stringify(input));
  });
}
