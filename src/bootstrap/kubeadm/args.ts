/**
 * kubeadm component arguments (`extraArgs`, `kubeletExtraArgs`) in both of kubeadm's
 * shapes: a map in v1beta3 (`{v: "2"}`), a list of `{name, value}` in v1beta4, where a
 * name may repeat (kubeadm v1beta4 `Arg`).
 */
import type { FieldProblem } from '../../errors.js';
import type { Arg } from './types.js';
import type { KubeadmApiVersion } from './version.js';

/** Object paths, inside each kind, that hold arguments. */
export const ARG_PATHS: Record<string, string[][]> = {
  ClusterConfiguration: [['apiServer', 'extraArgs'], ['controllerManager', 'extraArgs'], ['scheduler', 'extraArgs'], ['etcd', 'local', 'extraArgs']],
  InitConfiguration: [['nodeRegistration', 'kubeletExtraArgs']],
  JoinConfiguration: [['nodeRegistration', 'kubeletExtraArgs']],
};

const scalarText = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;

/**
 * Read arguments given either as a map or as a list of `{name, value}`; numbers and
 * booleans become their text (`110`, `true`), as the flag would read them.
 *
 * @param value the field's value as the request gave it.
 * @param path the field path, for problems.
 * @returns the arguments in order, or undefined when the value has neither shape (a
 *   problem is pushed).
 */
export function readArgs(value: unknown, path: string, problems: FieldProblem[]): Arg[] | undefined {
  if (Array.isArray(value)) {
    const out: Arg[] = [];
    value.forEach((item, i) => {
      const rec = item as Record<string, unknown> | null;
      const name = rec && typeof rec === 'object' ? rec.name : undefined;
      const text = rec && typeof rec === 'object' ? scalarText(rec.value ?? '') : undefined;
      const extra = rec && typeof rec === 'object' ? Object.keys(rec).filter((k) => k !== 'name' && k !== 'value') : [];
      if (typeof name !== 'string' || name === '' || text === undefined || extra.length > 0) {
        problems.push({ path: `${path}[${i}]`, message: 'must be {name, value} with a non-empty name and a string value' });
      } else out.push({ name, value: text });
    });
    return out;
  }
  if (value && typeof value === 'object') {
    const out: Arg[] = [];
    for (const [name, v] of Object.entries(value)) {
      const text = scalarText(v);
      if (text === undefined) problems.push({ path: `${path}.${name}`, message: 'must be a string' });
      else out.push({ name, value: text });
    }
    return out;
  }
  problems.push({ path, message: 'must be a map of flag names to values, or a list of {name, value}' });
  return undefined;
}

/**
 * Merge override arguments over generated ones: an override replaces every generated
 * argument of the same name (in place of the first), new names follow in order.
 */
export function mergeArgs(base: Arg[], override: Arg[]): Arg[] {
  const pending = new Map<string, Arg[]>();
  for (const a of override) pending.set(a.name, [...(pending.get(a.name) ?? []), a]);
  const overridden = new Set(pending.keys());
  const out: Arg[] = [];
  for (const a of base) {
    if (!overridden.has(a.name)) out.push(a);
    else if (pending.has(a.name)) {
      out.push(...pending.get(a.name)!);
      pending.delete(a.name);
    }
  }
  for (const list of pending.values()) out.push(...list);
  return out;
}

/**
 * Emit arguments in the target version's form: a map for v1beta3 (where a repeated name
 * cannot be held: a problem naming it), the list for v1beta4.
 */
export function emitArgs(list: Arg[], apiVersion: KubeadmApiVersion, path: string, problems: FieldProblem[]): Record<string, string> | Arg[] {
  if (apiVersion === 'kubeadm.k8s.io/v1beta4') return list.map((a) => ({ name: a.name, value: a.value }));
  const map: Record<string, string> = {};
  for (const a of list) {
    if (Object.hasOwn(map, a.name)) {
      problems.push({ path, message: `repeats the argument "${a.name}", which kubeadm.k8s.io/v1beta3 (a map) cannot hold; use Kubernetes 1.31+ (v1beta4) or give it once` });
    }
    map[a.name] = a.value;
  }
  return map;
}
