/**
 * A Debian bookworm guest for first-boot tests: built once with mmdebstrap (cloud-init,
 * systemd, a kernel, Debian's Ignition, and the stand-ins under `guest/rootfs/`), cached
 * outside the repository keyed by its recipe, booted under qemu-system-x86_64 (TCG) with
 * the kernel arguments the service's `/ipxe` gives, on a network where it reaches only
 * the service, and read back after power-off with debugfs, without mounting anything.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inCI, missingDependency } from '../support/missing.js';

const run = promisify(execFile);

/** Debian packages of the guest, beyond mmdebstrap's minbase (curl: the boot report script, src/provision/plan/report.ts). */
const PACKAGES = ['systemd-sysv', 'udev', 'dbus', 'cloud-init', 'linux-image-amd64', 'ignition', 'iproute2', 'sudo', 'passwd', 'systemd-timesyncd', 'curl'];
/** The files laid over the guest's root: the kubeadm stand-in and the test's units. */
const OVERLAY = new URL('./guest/rootfs/', import.meta.url).pathname;

/** The byte pipe qemu runs for each guest connection to the service. */
const BRIDGE = fileURLToPath(new URL('../support/tcp-bridge.mjs', import.meta.url));

/** The tools the first-boot tests need on the host. */
const TOOLS = ['qemu-system-x86_64', 'mmdebstrap', 'debugfs', 'mke2fs', 'tar'];

function onPath(tool: string): boolean {
  return (process.env.PATH ?? '/usr/bin:/bin').split(':').some((d) => {
    try {
      accessSync(join(d, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The `skip` option for first-boot tests: false when every tool is installed (or under
 * CI, where a missing one fails the test); else a loud reason. `BOOTWRIGHT_TEST_FIRSTBOOT=0`
 * skips them even under CI, for a second pass of the suite on another Node.js runtime
 * (the guest, not the runtime, is what they test; CI boots it once).
 */
export function firstBootSkip(): string | false {
  if (process.env.BOOTWRIGHT_TEST_FIRSTBOOT === '0') {
    const line = '*** SKIPPED: BOOTWRIGHT_TEST_FIRSTBOOT=0: real first boots are NOT run in this pass ***';
    process.stderr.write(`\n${line}\n\n`);
    return line;
  }
  const missing = TOOLS.filter((t) => !onPath(t));
  if (missing.length === 0) return false;
  return missingDependency(`first-boot tests need ${missing.join(', ')} (apt-get install -y qemu-system-x86 mmdebstrap e2fsprogs): real first boots are NOT checked`);
}

/** Every file of the overlay, relative paths sorted, for the recipe's key. */
function overlayFiles(dir = OVERLAY, at = ''): string[] {
  return readdirSync(join(dir, at), { withFileTypes: true }).flatMap((e) => {
    const rel = at ? `${at}/${e.name}` : e.name;
    return e.isDirectory() ? overlayFiles(dir, rel) : [rel];
  }).sort();
}

/** A key of everything the guest is built from: packages, suite and overlay bytes and modes. */
function recipeKey(): string {
  const h = createHash('sha256').update(`bookworm minbase ${PACKAGES.join(',')}\n`);
  for (const f of overlayFiles()) h.update(`${f} ${(statSync(join(OVERLAY, f)).mode & 0o7777).toString(8)}\n`).update(readFileSync(join(OVERLAY, f)));
  return h.digest('hex').slice(0, 16);
}

/** A built guest: its root filesystem as a directory (owned as in the guest), and its kernel and initrd. */
export interface GuestImage {
  rootDir: string;
  kernel: string;
  initrd: string;
}

/** Where built guests are kept between runs (outside the repository). */
const CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'bootwright', 'firstboot');

/**
 * The guest, from the cache or built now (mmdebstrap from Debian's mirrors: a few
 * minutes). Each build happens in its own directory holding root, kernel and initrd,
 * renamed into place whole; concurrent callers in other processes build their own and
 * the first rename wins (rename(2) refuses a non-empty target), the others discard theirs.
 */
export async function guestImage(): Promise<GuestImage> {
  const dir = join(CACHE, recipeKey());
  const at = (d: string): GuestImage => ({ rootDir: join(d, 'root'), kernel: join(d, 'vmlinuz'), initrd: join(d, 'initrd.img') });
  const image = at(join(dir, 'image'));
  if (existsSync(image.rootDir) && existsSync(image.kernel) && existsSync(image.initrd)) return image;
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(dir, 'build-'));
  const built = at(join(work, 'image'));
  try {
    const overlayTar = join(work, 'overlay.tar');
    execFileSync('tar', ['-C', OVERLAY, '--owner=0', '--group=0', '--numeric-owner', '-cf', overlayTar, '.']);
    mkdirSync(join(work, 'image'));
    const root = built.rootDir;
    await run(
      'mmdebstrap',
      [
        '--variant=minbase',
        `--include=${PACKAGES.join(',')}`,
        `--customize-hook=tar-in ${overlayTar} /`,
        // First boot is first boot: no machine-id yet; the network from systemd-networkd;
        // the test's units enabled; no login prompts on the serial console.
        '--customize-hook=chroot "$1" systemctl enable systemd-networkd.service bootwright-test-ignition.service bootwright-test-capture.service',
        '--customize-hook=chroot "$1" systemctl mask serial-getty@ttyS0.service getty@tty1.service',
        '--customize-hook=rm -f "$1/etc/machine-id" && touch "$1/etc/machine-id"',
        'bookworm',
        root,
      ],
      { maxBuffer: 64 * 1024 * 1024, timeout: 20 * 60_000 },
    );
    const boot = readdirSync(join(root, 'boot'));
    const kernel = boot.find((f) => f.startsWith('vmlinuz-'));
    const initrd = boot.find((f) => f.startsWith('initrd.img-'));
    if (!kernel || !initrd) throw new Error(`no kernel or initrd in the guest's /boot: ${boot.join(' ')}`);
    copyFileSync(join(root, 'boot', kernel), built.kernel);
    copyFileSync(join(root, 'boot', initrd), built.initrd);
    try {
      renameSync(join(work, 'image'), join(dir, 'image'));
    } catch (e) {
      // Another process finished first: its image is complete, ours is discarded below.
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return image;
}

/** One boot's disk: a fresh ext4 image made from the guest's root, read back with debugfs. */
export class GuestDisk {
  private constructor(readonly path: string) {}

  /**
   * Make a 3 GiB sparse ext4 disk holding the guest's root (mke2fs -d: no mount, no loop
   * device), plus `extra` host files written to it (debugfs -w; their directories made,
   * mode 0755, root-owned): what one boot needs that the cached image has not.
   */
  static async create(image: GuestImage, extra: { from: string; to: string }[] = []): Promise<GuestDisk> {
    const dir = mkdtempSync(join(tmpdir(), 'bootwright-firstboot-'));
    const path = join(dir, 'root.img');
    await run('mke2fs', ['-q', '-t', 'ext4', '-L', 'root', '-d', image.rootDir, path, '3G']);
    if (extra.length > 0) {
      const commands = extra.flatMap(({ from, to }) => {
        const parent = to.slice(0, to.lastIndexOf('/'));
        const parents = parent.split('/').slice(1).map((_, i, parts) => `/${parts.slice(0, i + 1).join('/')}`);
        return [...parents.map((p) => `mkdir ${p}`), `write ${from} ${to}`, `sif ${to} mode 0100755`, `sif ${to} uid 0`, `sif ${to} gid 0`];
      });
      const script = join(dir, 'debugfs.cmd');
      writeFileSync(script, `${commands.join('\n')}\n`);
      // mkdir of an existing directory only complains: debugfs goes on with the next command.
      await run('debugfs', ['-w', '-f', script, path]);
    }
    return new GuestDisk(path);
  }

  /** A file's bytes, or undefined when it does not exist. */
  read(file: string): Buffer | undefined {
    if (this.stat(file)?.type !== 'file') return undefined;
    return execFileSync('debugfs', ['-R', `cat ${file}`, this.path], { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  }

  /** A file's bytes as text; throws when it does not exist. */
  text(file: string): string {
    const b = this.read(file);
    if (b === undefined) throw new Error(`${file} is not on the guest's disk`);
    return b.toString('utf8');
  }

  /** Mode (permission bits and type), owner and group ids, or undefined when absent. */
  stat(file: string): { mode: number; uid: number; gid: number; type: 'file' | 'directory' | 'symlink' | 'other' } | undefined {
    const out = execFileSync('debugfs', ['-R', `stat ${file}`, this.path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const m = /Type: (\w+)\s+Mode:\s+(\d+)/.exec(out);
    const ids = /User:\s+(\d+)\s+Group:\s+(\d+)/.exec(out);
    if (!m || !ids) return undefined;
    const type = m[1] === 'regular' ? 'file' : m[1] === 'directory' ? 'directory' : m[1] === 'symlink' ? 'symlink' : 'other';
    return { mode: parseInt(m[2]!, 8), uid: Number(ids[1]), gid: Number(ids[2]), type };
  }

  /** The names in a directory (without `.` and `..`), or [] when it does not exist. */
  list(dir: string): string[] {
    if (this.stat(dir)?.type !== 'directory') return [];
    const out = execFileSync('debugfs', ['-R', `ls -p ${dir}`, this.path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    // -p: /inode/mode/uid/gid/name/size/
    return out
      .split('\n')
      .map((l) => l.split('/')[5])
      .filter((n): n is string => n !== undefined && n !== '' && n !== '.' && n !== '..');
  }

  /** Remove the disk. */
  remove(): void {
    rmSync(join(this.path, '..'), { recursive: true, force: true });
  }
}

/** The outcome of one boot. */
export interface Boot {
  /** qemu's exit code (0 after the guest powers off). */
  code: number | null;
  /** Everything the guest wrote to its serial console. */
  console: string;
  /** Milliseconds from qemu's start to its exit. */
  ms: number;
}

/**
 * Boot the guest's kernel directly (the iPXE chain has its own qemu test) with `args`,
 * on a user-mode network restricted to the service: 10.0.2.100:8080 in the guest is
 * 127.0.0.1:`port` on the host (through test/support/tcp-bridge.mjs), and nothing else
 * is reachable.
 *
 * @param timeoutMs the guest is killed after this long (the boot then fails).
 */
export async function bootGuest(image: GuestImage, disk: GuestDisk, args: string[], port: number, timeoutMs: number): Promise<Boot> {
  const consoleLog = join(disk.path, '..', 'console.log');
  const started = Date.now();
  const child = spawn(
    'qemu-system-x86_64',
    [
      '-machine', 'q35', '-accel', 'tcg', '-m', '1024', '-smp', '1',
      '-display', 'none', '-monitor', 'none', '-no-reboot',
      '-serial', `file:${consoleLog}`,
      '-kernel', image.kernel, '-initrd', image.initrd,
      '-append', ['root=/dev/vda', 'rw', 'console=ttyS0', 'net.ifnames=0', 'panic=-1', ...args].join(' '),
      '-drive', `file=${disk.path},format=raw,if=virtio`,
      // One bridge process per guest connection: a `tcp:` chardev target is a single
      // stream that every guest connection would share (cloud-init opens one per seed file).
      '-netdev', `user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:8080-cmd:${process.execPath} ${BRIDGE} ${port}`,
      '-device', 'virtio-net-pci,netdev=n0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  const console = existsSync(consoleLog) ? readFileSync(consoleLog, 'utf8') : '';
  if (stderr && inCI) process.stderr.write(stderr);
  return { code, console, ms: Date.now() - started };
}
