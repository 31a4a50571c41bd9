/**
 * Hostile inputs for the hostile suite and `npm run bench -- hostile`: each a small text
 * that asks for unbounded work (alias and depth bombs, floods) or is malformed in a way
 * parsers trip on (invalid UTF-8, prototype keys). Built, never stored as fixtures.
 */
import { dump } from 'js-yaml';
import { worker } from '../support/requests.js';

/** A worker NodeBootstrap as YAML text, with `spec.kubeadm.clusterConfiguration` lines appended verbatim (already indented). */
function workerWithClusterConfiguration(lines: string[]): string {
  const base = dump(worker({ kubeadm: { clusterConfiguration: { apiServer: {} } } })).replace(/ {6}apiServer: \{\}\n/, '');
  return `${base}${lines.map((l) => `      ${l}`).join('\n')}\n`;
}

/**
 * The "billion laughs" in YAML: `levels` anchors, each a list of `width` aliases of the
 * one before, so the last expands to width^levels strings. Within js-yaml's alias cap
 * (`levels * width` aliases) and under 1 KB for the default 9 × 10.
 */
export function aliasBomb(levels = 9, width = 10): string {
  const name = (i: number) => `l${i}`;
  const lines = [`${name(0)}: &${name(0)} [${Array(width).fill('"lol"').join(', ')}]`];
  for (let i = 1; i < levels; i++) lines.push(`${name(i)}: &${name(i)} [${Array(width).fill(`*${name(i - 1)}`).join(', ')}]`);
  return workerWithClusterConfiguration(lines);
}

/**
 * A bomb of mappings: each level a mapping of `width` keys, every value an alias of the
 * level before, spelled with YAML merge-key syntax (`<<: *prev`) and plain keys, so a
 * loader that honours merges and one that does not both meet width^levels values.
 */
export function mergeBomb(levels = 8, width = 7): string {
  return workerWithClusterConfiguration(mergeBombLines(levels, width));
}

function mergeBombLines(levels: number, width: number): string[] {
  const lines = [`m0: &m0 {${Array.from({ length: width }, (_, k) => `k${k}: "lol"`).join(', ')}}`];
  for (let i = 1; i < levels; i++) {
    lines.push(`m${i}: &m${i} {<<: *m${i - 1}, ${Array.from({ length: width - 1 }, (_, k) => `j${k}: *m${i - 1}`).join(', ')}}`);
  }
  return lines;
}

/**
 * A worker asking for Ignition whose additional config (a Container Linux Config, read
 * as YAML 1.1, where `<<` merges) is a merge bomb under `storage`.
 */
export function additionalConfigBomb(): string {
  const clc = `storage:\n${mergeBombLines(8, 7).map((l) => `  ${l}`).join('\n')}\n`;
  return JSON.stringify(worker({ provisioning: { ignition: { containerLinuxConfig: { additionalConfig: clc } } }, output: { format: 'ignition' } }));
}

/** A value that contains itself: `&a [*a]`. */
export function recursiveAlias(): string {
  return workerWithClusterConfiguration(['loop: &loop [*loop]']);
}

/** JSON nested `depth` levels of arrays (`[[[…]]]`), the whole body. */
export function deepJson(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

/** A worker whose kubeadm clusterConfiguration nests `depth` mappings, as YAML (flow style). */
export function deepYaml(depth: number): string {
  return workerWithClusterConfiguration([`deep: ${'{a: '.repeat(depth)}1${'}'.repeat(depth)}`]);
}

/** A worker with `n` files, as JSON. */
export function manyFiles(n: number): string {
  return JSON.stringify(worker({ provisioning: { files: Array.from({ length: n }, (_, i) => ({ path: `/etc/app/f${i}`, content: 'x' })) } }));
}

/** A worker with `n` mounts, as JSON. */
export function manyMounts(n: number): string {
  return JSON.stringify(worker({ provisioning: { mounts: Array.from({ length: n }, (_, i) => [`/dev/vd${i}`, `/mnt/m${i}`]) } }));
}

/** A worker whose one label value is `chars` characters long, as JSON. */
export function hugeString(chars: number): string {
  const doc = worker() as { metadata: Record<string, unknown> };
  doc.metadata.labels = { big: 'x'.repeat(chars) };
  return JSON.stringify(doc);
}

/** A worker's YAML with a byte that is not UTF-8 in a string (0xff). */
export function invalidUtf8(): Buffer {
  const text = dump(worker({ provisioning: { preKubeadmCommands: ['echo MARK'] } }));
  const at = text.indexOf('MARK');
  return Buffer.concat([Buffer.from(text.slice(0, at), 'utf8'), Buffer.from([0xff, 0xfe]), Buffer.from(text.slice(at + 4), 'utf8')]);
}

/** A worker as JSON text with `key` added at the top level and in metadata.labels. */
export function prototypeKey(key: '__proto__' | 'constructor' | 'prototype', where: 'top' | 'labels'): string {
  const text = JSON.stringify(worker());
  return where === 'top'
    ? text.replace(/^\{/, `{"${key}": {"polluted": true},`)
    : text.replace('"metadata":{', `"metadata":{"labels":{"${key}":"x"},`);
}

/** A `labelSelector` of `terms` distinct equality terms. */
export function labelSelector(terms: number): string {
  return Array.from({ length: terms }, (_, i) => `k${i}=v`).join(',');
}

/** A query string of `n` distinct parameters. */
export function queryFlood(n: number): string {
  return Array.from({ length: n }, (_, i) => `p${i}=v`).join('&');
}
