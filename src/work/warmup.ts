/**
 * Warming the render pipeline up before the service is ready (issue 32). A fresh process
 * runs its first renders in V8's interpreter: in a boot storm that meets a just-started
 * service, every thread's first hundred or so assemblies and renders cost two to twenty
 * times a compiled one's, and the storm's first second queued behind them (its
 * `/ignition` p99 half again its later seconds'). So each render thread, and the main
 * thread (which renders small tasks inline), first assembles and renders the example
 * inventory's machines (examples/inventory/: a Flatcar machine served Ignition, an Ubuntu
 * machine served cloud-config) `rounds` times, each round under a machine name of its
 * own, so that the per-machine files (kubeadm's join configuration, the report script)
 * are compressed anew as a real machine's are.
 *
 * Nothing is written, cached or served: the renders are thrown away, and a failed one
 * (an example the rules no longer accept) only ends the warm-up early. Without the
 * example files (a copy without them) there is nothing to warm up on.
 */
import { IGNITION_MEDIA_TYPE } from '../render.js';
import { DEFAULT_DOCUMENT_LIMITS } from '../request/bounds.js';
import { storedExample } from '../store/examples.js';
import type { ClusterSpec, MachineSpec, ProfileSpec, StoredResource } from '../store/resources.js';
import { type AssembleTask, runTask } from './task.js';

/** What a thread warms up on: the example machines' assembly tasks, each with the render its boot asks for, run `rounds` times. */
export interface WarmUp {
  tasks: AssembleTask[];
  rounds: number;
}

/** The example machines, and the profile each is served by: Ignition and cloud-config. */
const EXAMPLES = [
  { machine: 'examples/inventory/flatcar/machine.yaml', profile: 'examples/inventory/flatcar/profile.yaml' },
  { machine: 'examples/inventory/ubuntu/machine.yaml', profile: 'examples/inventory/ubuntu/profile.yaml' },
] as const;

/**
 * The warm-up tasks: one per example machine, with the render its boot asks for (an
 * Ignition machine: the first of `ignitionVersions`, as Ignition's Accept header names
 * it; a cloud-config machine: the NoCloud user-data), a boot report URL on `baseUrl`
 * included, as the boot routes render.
 *
 * @param ignitionVersions the specs pre-rendered (`prerenderIgnitionVersions`), e.g. `['3.4.0']`
 * @returns no tasks when the example files are absent or do not validate
 */
export function warmUpTasks(ignitionVersions: readonly string[], baseUrl = 'http://127.0.0.1'): AssembleTask[] {
  const cluster = storedExample('Cluster', 'examples/inventory/cluster.yaml')?.stored as StoredResource<ClusterSpec> | undefined;
  if (!cluster) return [];
  const tasks: AssembleTask[] = [];
  for (const paths of EXAMPLES) {
    const machine = storedExample('Machine', paths.machine)?.stored as StoredResource<MachineSpec> | undefined;
    const profile = storedExample('Profile', paths.profile)?.stored as StoredResource<ProfileSpec> | undefined;
    if (!machine || !profile) continue;
    const ignition = profile.spec.output?.format === 'ignition';
    const version = ignitionVersions[0] ?? '3.4.0';
    tasks.push({
      op: 'assemble',
      parts: { machine, cluster, profile },
      limits: DEFAULT_DOCUMENT_LIMITS,
      render: {
        accept: ignition ? `${IGNITION_MEDIA_TYPE};version=${version}` : undefined,
        query: { format: ignition ? 'ignition' : 'cloud-config', reportUrl: `${baseUrl}/report/${machine.name}` },
      },
    });
  }
  return tasks;
}

/**
 * Task `i` of a warm-up as round `round` runs it: under the machine name
 * `warm-up-<round>-<i>`, its report URL's last segment that name too, so that each
 * round's per-machine files differ (and are compressed anew) as two machines' do.
 */
export function warmUpTask(task: AssembleTask, round: number, i: number): AssembleTask {
  const name = `warm-up-${round}-${i}`;
  const parts = { ...task.parts, machine: { ...task.parts.machine, name } };
  if (!task.render) return { ...task, parts };
  const reportUrl = task.render.query.reportUrl?.replace(/[^/]*$/, name);
  return { ...task, parts, render: { ...task.render, query: { ...task.render.query, reportUrl } } };
}

/**
 * Run round `round` of a warm-up on this thread: every task once ({@link warmUpTask}),
 * its render thrown away.
 *
 * @returns false when a task failed or did not render (the warm-up should stop: the
 *   examples do not render), else true
 */
export function warmUpRound(warmUp: WarmUp, round: number): boolean {
  for (const [i, task] of warmUp.tasks.entries()) {
    try {
      const done = runTask(warmUpTask(task, round, i));
      if (task.render && !done.rendered) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Run every round of a warm-up on this thread (a worker's: it serves nothing meanwhile).
 *
 * @returns the rounds run to the end (fewer than `rounds` when one failed)
 */
export function warmUpThread(warmUp: WarmUp): number {
  for (let round = 0; round < warmUp.rounds; round++) if (!warmUpRound(warmUp, round)) return round;
  return warmUp.rounds;
}
