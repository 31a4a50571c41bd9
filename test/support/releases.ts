/**
 * Earlier releases of bootwright, built from the repository's own history, for the
 * upgrade tests (test/compat/): the release a store was written by, started as its
 * users started it (`node dist/cli.js serve`), so the current build can take over what
 * it stored.
 *
 * A release is `git archive`d out of this clone into a cache outside the repository
 * (`$BOOTWRIGHT_RELEASES_CACHE`, else `$XDG_CACHE_HOME/bootwright/releases`, else
 * `~/.cache/bootwright/releases`), keyed by its commit and the Node.js ABI that runs it
 * (better-sqlite3 is a native module), then `npm ci` and `npm run build` there, once per
 * machine. A build is made in a scratch directory and renamed into place when complete,
 * so an interrupted build is never taken for a good one.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The repository this test runs from. */
export const REPO = path.resolve(new URL('../..', import.meta.url).pathname);

/**
 * The release before boot reports, the first that stored machines (issue 27), and the
 * baseline until a tag exists. Tagged `v0.1.0`.
 */
export const BASELINE_COMMIT = '7f544b7382db24b2968150dddf7a05e79f6379cd';

/** Where built releases are kept. */
export function releasesCache(): string {
  if (process.env.BOOTWRIGHT_RELEASES_CACHE) return process.env.BOOTWRIGHT_RELEASES_CACHE;
  const base = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return path.join(base, 'bootwright', 'releases');
}

async function git(...args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-C', REPO, ...args], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** A release to upgrade from: its name (tag or short commit) and full commit. */
export interface Release {
  name: string;
  commit: string;
}

/**
 * The releases the current tree must take over from: {@link BASELINE_COMMIT} and the
 * newest `v*` tag that is an ancestor of HEAD and not HEAD itself (a tag on HEAD is this
 * very tree), without duplicates.
 *
 * @throws Error when the clone lacks the baseline commit (a shallow clone)
 */
export async function upgradeSources(): Promise<Release[]> {
  const head = await git('rev-parse', 'HEAD');
  try {
    await git('cat-file', '-e', `${BASELINE_COMMIT}^{commit}`);
  } catch {
    throw new Error(`the clone lacks commit ${BASELINE_COMMIT} (a shallow clone?): the upgrade test builds earlier releases from the repository's history; fetch it whole (git fetch --unshallow)`);
  }
  const out: Release[] = [{ name: BASELINE_COMMIT.slice(0, 7), commit: BASELINE_COMMIT }];
  const tags = (await git('tag', '--list', 'v*', '--merged', 'HEAD', '--sort=-version:refname')).split('\n').filter(Boolean);
  for (const tag of tags) {
    const commit = await git('rev-list', '-n', '1', tag);
    if (commit === head) continue;
    if (commit === BASELINE_COMMIT) out[0] = { name: tag, commit };
    else out.push({ name: tag, commit });
    break;
  }
  return out;
}

/**
 * Build `release` (once per machine, commit and Node.js ABI) and return its directory,
 * holding `dist/cli.js` and its `node_modules`.
 *
 * @param log progress lines (the build takes minutes the first time)
 * @throws Error with npm's output when the build fails
 */
export async function buildRelease(release: Release, log: (line: string) => void = () => undefined): Promise<string> {
  const key = `${release.commit}-node${process.versions.modules}`;
  const dir = path.join(releasesCache(), key);
  if (existsSync(path.join(dir, '.complete'))) return dir;
  mkdirSync(releasesCache(), { recursive: true });
  const scratch = `${dir}.building-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  try {
    log(`building ${release.name} (${release.commit.slice(0, 12)}) in ${dir}`);
    const started = Date.now();
    await run('sh', ['-c', `git -C "$0" archive --format=tar "$1" | tar -x -C "$2"`, REPO, release.commit, scratch]);
    const npm = async (...args: string[]) => {
      try {
        await run('npm', args, { cwd: scratch, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' } });
      } catch (e) {
        const err = e as { stdout?: string; stderr?: string; message: string };
        throw new Error(`npm ${args.join(' ')} failed for ${release.name}: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`, { cause: e });
      }
    };
    await npm('ci');
    await npm('run', 'build');
    writeFileSync(path.join(scratch, '.complete'), `${release.commit}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(scratch, dir);
    log(`built ${release.name} in ${Math.round((Date.now() - started) / 1000)} s`);
    return dir;
  } catch (e) {
    rmSync(scratch, { recursive: true, force: true });
    throw e;
  }
}

/** The `version` in a built release's package.json. */
export function releaseVersion(dir: string): string {
  return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}
