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
 * The releases made so far, oldest first: each version's name and the commit it was
 * released from (the last commit whose CHANGELOG.md had that version on top, before the
 * next version's section opened). Kept here as well as in tags, since a clone does not
 * always carry tags (a mirror, `git clone --no-tags`, a CI checkout), and an upgrade
 * test that silently found no tag would test the baseline alone.
 */
export const RELEASES: readonly Release[] = [
  // The release before boot reports, the first that stored machines (issue 27).
  { name: 'v0.1.0', commit: '7f544b7382db24b2968150dddf7a05e79f6379cd' },
  // CHANGELOG.md "v0.2.0 — 2026-12-03"; v0.3.0's section opened in the next commit, 071738c.
  { name: 'v0.2.0', commit: 'cd545541c91ad55066f928b0c4c310d61b7cd4bf' },
];

/** The baseline every upgrade is tested from: v0.1.0, the first release that stored machines. */
export const BASELINE_COMMIT = RELEASES[0]!.commit;

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

async function isAncestor(commit: string, of: string): Promise<boolean> {
  try {
    await git('merge-base', '--is-ancestor', commit, of);
    return true;
  } catch {
    return false;
  }
}

/** A release to upgrade from: its name (tag or version) and full commit. */
export interface Release {
  name: string;
  commit: string;
}

/**
 * The releases the current tree must take over from: the baseline (v0.1.0) and the
 * newest release before HEAD, among {@link RELEASES} and the clone's `v*` tags (a tag
 * newer than the list counts), without duplicates. A release on HEAD itself is this very
 * tree and is left out.
 *
 * @throws Error when the clone lacks a recorded release's commit (a shallow clone)
 */
export async function upgradeSources(): Promise<Release[]> {
  const head = await git('rev-parse', 'HEAD');
  for (const r of RELEASES) {
    try {
      await git('cat-file', '-e', `${r.commit}^{commit}`);
    } catch {
      throw new Error(`the clone lacks commit ${r.commit} (${r.name}; a shallow clone?): the upgrade test builds earlier releases from the repository's history; fetch it whole (git fetch --unshallow)`);
    }
  }
  const candidates: Release[] = [];
  for (const r of RELEASES) if (r.commit !== head && (await isAncestor(r.commit, head))) candidates.push(r);
  const tags = (await git('tag', '--list', 'v*', '--merged', 'HEAD', '--sort=-version:refname')).split('\n').filter(Boolean);
  for (const tag of tags) {
    const commit = await git('rev-list', '-n', '1', tag);
    if (commit === head || candidates.some((c) => c.commit === commit)) continue;
    candidates.push({ name: tag, commit });
  }
  // The newest: the candidate every other one is an ancestor of.
  let newest: Release | undefined;
  for (const c of candidates) if (newest === undefined || (await isAncestor(newest.commit, c.commit))) newest = c;
  const out: Release[] = [RELEASES[0]!];
  if (newest !== undefined && newest.commit !== out[0]!.commit) out.push(newest);
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
