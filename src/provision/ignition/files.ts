/**
 * Plan files and directories as `storage.files[]` and `storage.directories[]`
 * (coreos/ignition `docs/configuration-v3_0.md`; DESIGN §3).
 */
import type { FieldProblem } from '../../errors.js';
import type { Owner, PlanDirectory, PlanFile } from '../plan/types.js';
import { GENERATED, type IgnitionDirectory, type IgnitionFile, type IgnitionOwner, type Sourced } from './config.js';
import { dataUrlResource, type EncodeOptions } from './dataurl.js';

/**
 * Trees a booted system mounts a tmpfs over (`/var/run` is a link to `/run`). Ignition
 * writes into the root filesystem before the first boot, so anything it puts there is
 * hidden once the system is up.
 */
const TMPFS_TREES = ['/run', '/var/run', '/tmp'];

/** The tmpfs tree `path` lies in, or undefined. */
export function tmpfsTree(path: string): string | undefined {
  return TMPFS_TREES.find((t) => path === t || path.startsWith(`${t}/`));
}

function owner(o: Owner): { user: IgnitionOwner; group: IgnitionOwner } {
  return { user: { name: o.user }, group: { name: o.group } };
}

/**
 * Plan files as Ignition files, in plan order, one entry per path: a replacing file sets
 * `overwrite: true` and `contents`; an appending file adds to `append` (a list of
 * resources in 3.x); a later replacing file of the same path starts over, as writing
 * the files in order would. Mode (decimal) and owner are the last file's for that path.
 * Owners are always written by name; Ignition creates `passwd` users before it writes
 * files, so files may belong to users the same config creates.
 *
 * Problems (pushed, not thrown): a path under `/run`, `/var/run` or `/tmp`, at
 * `<origin>.path`.
 */
export function fileEntries(files: readonly PlanFile[], encoding: EncodeOptions, problems: FieldProblem[]): Sourced<IgnitionFile>[] {
  const byPath = new Map<string, Sourced<IgnitionFile>>();
  for (const [i, file] of files.entries()) {
    const origin = file.origin !== undefined ? `${file.origin}.path` : GENERATED;
    const tree = tmpfsTree(file.path);
    if (tree) {
      problems.push({
        path: `${file.origin ?? `plan.files[${i}]`}.path`,
        message: `Ignition writes files before the first boot and ${tree} is a tmpfs mounted over them at boot, so ${file.path} would vanish; write it under /etc or /var`,
      });
      continue;
    }
    const resource = dataUrlResource(file.contents, encoding, file.gzip);
    const seen = byPath.get(file.path);
    if (file.append && seen) {
      (seen.entry.append ??= []).push(resource);
      Object.assign(seen.entry, { mode: file.mode, ...owner(file.owner) });
      continue;
    }
    const entry: IgnitionFile = file.append
      ? { path: file.path, append: [resource], mode: file.mode, ...owner(file.owner) }
      : { path: file.path, overwrite: true, contents: resource, mode: file.mode, ...owner(file.owner) };
    if (seen) seen.entry = entry;
    else byPath.set(file.path, { entry, origin });
  }
  return [...byPath.values()];
}

/**
 * A file bootwright generates: replaced whole, owned by root.
 *
 * @param mode permission bits, e.g. `0o600`
 */
export function generatedFile(path: string, text: string, mode: number, encoding: EncodeOptions, origin: string = GENERATED): Sourced<IgnitionFile> {
  const contents = dataUrlResource(Buffer.from(text, 'utf8'), encoding);
  return { entry: { path, overwrite: true, contents, mode, ...owner({ user: 'root', group: 'root' }) }, origin };
}

/**
 * Plan directories as `storage.directories[]` (decimal mode, owner by name), in plan
 * order. Problems: a path under a tmpfs tree (see {@link fileEntries}).
 */
export function directoryEntries(dirs: readonly PlanDirectory[], problems: FieldProblem[]): Sourced<IgnitionDirectory>[] {
  const out: Sourced<IgnitionDirectory>[] = [];
  for (const [i, dir] of dirs.entries()) {
    const tree = tmpfsTree(dir.path);
    if (tree) {
      problems.push({ path: `plan.directories[${i}].path`, message: `${tree} is a tmpfs mounted over what Ignition writes, so ${dir.path} would vanish` });
      continue;
    }
    out.push({ entry: { path: dir.path, mode: dir.mode, ...owner(dir.owner) }, origin: GENERATED });
  }
  return out;
}
