/**
 * `bootwright serve` as a real child process (through tsx, from src/), for tests that
 * need what only a process has: signals, exit codes, several replicas.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { after } from 'node:test';

/** Services started by this test file and not yet exited. */
const running = new Set<ChildProcessWithoutNullStreams>();

/** Milliseconds a service may outlive its test file's tests before it is killed. */
const LEFT_RUNNING_MS = 30_000;

// A test that fails before it stops its service must not leave it running: its open
// pipes would keep the test file's process alive, and the suite would never end (a CI
// run timed out so). Not at once when the tests end: the file's own `after` hooks,
// which may run after this one, stop their services and check how they exited. The
// timer does not keep the process alive, so it only fires if something else does.
after(() => {
  setTimeout(() => {
    for (const child of running) child.kill('SIGKILL');
  }, LEFT_RUNNING_MS).unref();
});

/** A started service process. */
export interface ServeProcess {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the loopback port once the service logs that it listens; rejects if it exits first. */
  port: Promise<number>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** Everything it wrote to stdout and stderr so far. */
  logs: () => string;
}

/**
 * Start `bootwright serve` on a kernel-chosen loopback port.
 *
 * @param env BOOTWRIGHT_* variables added to this process's environment
 *   (BOOTWRIGHT_PORT is 0 unless given).
 * @param args node's arguments (default: this tree's sources through tsx; an earlier
 *   release's build is `[<dir>/dist/cli.js, 'serve']`)
 */
export function startProcess(env: Record<string, string>, args: readonly string[] = ['--import', 'tsx', 'src/cli.ts', 'serve']): ServeProcess {
  const child = spawn(process.execPath, args, { env: { ...process.env, BOOTWRIGHT_PORT: '0', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end();
  running.add(child);
  child.on('exit', () => running.delete(child));
  let logs = '';
  const port = new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      logs += d.toString();
      const m = /Server listening at https?:\/\/127\.0\.0\.1:(\d+)/.exec(logs);
      if (m) resolve(Number(m[1]));
    });
    child.stderr.on('data', (d: Buffer) => (logs += d.toString()));
    child.on('exit', (code) => reject(new Error(`exited ${String(code)}: ${logs}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, port, exited, logs: () => logs };
}
