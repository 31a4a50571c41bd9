/**
 * Run qemu until its serial console shows a line of interest (a kernel URL a booting
 * machine asks for), then kill it: what the iPXE-in-qemu tests share.
 */
import { spawn } from 'node:child_process';

/** The qemu binary the iPXE tests boot (Debian's qemu-system-x86). */
export const QEMU = '/usr/bin/qemu-system-x86_64';

/**
 * Boot `qemu -nographic -m 256 -no-reboot ARGS…` until the console output contains
 * `needle` or `timeoutMs` pass (qemu exiting ends it early); qemu is killed either way.
 *
 * @returns whether `needle` was seen, and the whole console with ANSI escapes removed
 */
export async function bootUntil(args: string[], needle: string, timeoutMs = 90_000): Promise<{ reached: boolean; console: string }> {
  const qemu = spawn(QEMU, ['-nographic', '-m', '256', '-no-reboot', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const reached = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    const onData = (d: Buffer) => {
      output += d.toString('latin1');
      if (output.includes(needle)) {
        clearTimeout(timer);
        resolve(true);
      }
    };
    qemu.stdout.on('data', onData);
    qemu.stderr.on('data', onData);
    qemu.on('exit', () => {
      clearTimeout(timer);
      resolve(output.includes(needle));
    });
  });
  qemu.kill('SIGKILL');
  return { reached, console: output.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '') };
}
