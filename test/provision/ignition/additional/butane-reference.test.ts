/**
 * bootwright's Butane translation (src/provision/ignition/additional/butane.ts) against
 * Butane itself (issue 28): for every Butane config of Butane's documented examples (the
 * pinned module's own `docs/examples.md`, read from the Go module cache: nothing of
 * Butane's is kept here) and of this suite's additional-config tests, `butane --strict`
 * and bootwright give the same Ignition config in meaning (every `data:` URL decoded,
 * lists keyed, compression set aside), or bootwright refuses it with one of its
 * documented refusals (a files-dir, Butane sugar, naming the key: butane.ts
 * `UNTRANSLATED`; an experimental spec), or both refuse it.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, describe, it } from 'node:test';
import { readButaneConfig } from '../../../../src/provision/ignition/additional/butane.js';
import { detectAdditionalConfig } from '../../../../src/provision/ignition/additional/detect.js';
import { missingDependency } from '../../../support/missing.js';
import { referenceTool, referenceToolMissing } from '../../../support/tools.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The Butane module version pinned in tools/reference/coreos/go.mod. */
const BUTANE_VERSION = /^\s*github\.com\/coreos\/butane (v\S+)/m.exec(readFileSync(new URL('../../../../tools/reference/coreos/go.mod', import.meta.url), 'utf8'))?.[1];

/** Butane's docs/examples.md from the Go module cache (where `npm run tools` put it), or undefined. */
function examplesMarkdown(): string | undefined {
  if (!BUTANE_VERSION) return undefined;
  try {
    const cache = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
    const file = path.join(cache, 'github.com', 'coreos', `butane@${BUTANE_VERSION}`, 'docs', 'examples.md');
    return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** The ```yaml blocks of a Markdown text that are Butane configs (they name a variant). */
function butaneBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => /^variant: /m.test(b));
}

/** Configs of this suite's own tests of Butane additional configs (realistic: what templates add). */
const SUITE_CONFIGS = [
  'variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/motd.d/site.conf\n      mode: 0644\n      contents:\n        inline: |\n          rack 7\n',
  'variant: fcos\nversion: 1.4.0\nsystemd:\n  units:\n    - name: kubelet.service\n      dropins:\n        - name: 10-node-ip.conf\n          contents: |\n            [Service]\n            Environment=KUBELET_EXTRA_ARGS=--node-ip=${COREOS_EC2_IPV4_LOCAL}\n',
  'variant: flatcar\nversion: 1.1.0\nstorage:\n  links:\n    - path: /etc/extensions/kubernetes.raw\n      target: /opt/extensions/kubernetes/kubernetes-v1.33.2-x86-64.raw\n      hard: false\n  directories:\n    - path: /opt/extensions/kubernetes\n      mode: 0755\n',
  'variant: fcos\nversion: 1.7.0\npasswd:\n  users:\n    - name: ops\n      groups: [wheel]\n      ssh_authorized_keys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG5vdC1hLXJlYWwta2V5LWp1c3QtYS10ZXN0 ops@example]\n',
  'variant: fcos\nversion: 1.5.0\nkernel_arguments:\n  should_exist: [mitigations=auto]\n  should_not_exist: [mitigations=off]\n',
];

/** Files the examples read from a files-dir (`local:`, `trees`), so Butane itself can translate them. */
function filesDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bootwright-butane-'));
  writeFileSync(path.join(dir, 'local-file3'), 'local file\n');
  mkdirSync(path.join(dir, 'tree', 'directory'), { recursive: true });
  for (const f of ['tree/file', 'tree/overridden-file', 'tree/directory/file']) writeFileSync(path.join(dir, f), `${f}\n`);
  return dir;
}

/** A `data:` URL's bytes (RFC 2397), gunzipped when the resource says gzip. */
function dataBytes(source: string, compression: unknown): string {
  const comma = source.indexOf(',');
  const meta = source.slice(5, comma);
  const body = source.slice(comma + 1);
  let bytes = meta.endsWith(';base64') ? Buffer.from(body, 'base64') : Buffer.from(decodeURIComponent(body), 'utf8');
  if (compression === 'gzip') bytes = gunzipSync(bytes);
  return bytes.toString('hex');
}

/**
 * A config's meaning: `data:` contents decoded (and gunzipped) into `bytes`, compression
 * dropped with them, empty lists and objects dropped, lists of named things sorted by
 * their name (path, name, device), `ignition.version` dropped.
 */
function meaning(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(meaning);
    const key = (v: unknown) => JSON.stringify(isObj(v) ? (v.path ?? v.name ?? v.device ?? v) : v);
    return items.every(isObj) ? [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)) : items;
  }
  if (!isObj(value)) return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (k === 'compression' && isObj(value) && typeof value.source === 'string' && value.source.startsWith('data:')) continue;
    if (k === 'source' && typeof v === 'string' && v.startsWith('data:')) {
      out.bytes = dataBytes(v, value.compression);
      continue;
    }
    const m = meaning(v);
    if ((Array.isArray(m) && m.length === 0) || (isObj(m) && Object.keys(m).length === 0)) continue;
    out[k] = m;
  }
  if (isObj(out.ignition)) {
    delete out.ignition.version;
    if (Object.keys(out.ignition).length === 0) delete out.ignition;
  }
  return out;
}

const butane = referenceTool('butane');
const examples = examplesMarkdown();
const skip =
  referenceToolMissing('butane', "bootwright's Butane translation is NOT compared with Butane's") ||
  (examples === undefined ? missingDependency(`Butane ${BUTANE_VERSION ?? '?'}'s docs/examples.md in the Go module cache (npm run tools downloads it): Butane's examples are NOT compared`) : false);

describe('Butane translation, against butane --strict', { skip }, () => {
  const dir = filesDir();
  after(() => rmSync(dir, { recursive: true, force: true }));
  const configs = [...butaneBlocks(examples ?? ''), ...SUITE_CONFIGS];

  it(`every documented example and suite config means the same, or is a documented refusal (${configs.length} configs)`, () => {
    assert.ok(configs.length >= 25, `only ${configs.length} Butane configs`);
    const differ: string[] = [];
    const refusals: string[] = [];
    for (const text of configs) {
      const title = text.split('\n').slice(0, 2).join(' ');
      const theirs = spawnSync(butane!, ['--strict', '--files-dir', dir], { input: text, encoding: 'utf8' });
      // Read as bootwright reads an additional config (go-yaml's scalars: `mode: 0644` is octal).
      const detected = detectAdditionalConfig(text);
      assert.equal(detected.kind, 'butane', title);
      const ours = readButaneConfig(detected.document, true);
      if (theirs.status !== 0) {
        // Butane refuses it (an experimental spec without --pedantic, say): so must bootwright.
        if (ours.problems.length === 0) differ.push(`${title}: butane refuses it (${theirs.stderr.trim()}), bootwright translates it`);
        continue;
      }
      if (ours.problems.length > 0) {
        // Documented: what needs a files-dir, layout sugar, experimental specs (butane.ts).
        const experimental = /^version: \S+-experimental$/m.test(text);
        const undocumented = ours.problems.filter((p) => !/needs a Butane files-dir|is Butane sugar bootwright does not translate/.test(p.message) && !(experimental && p.at === 'version'));
        if (undocumented.length > 0) differ.push(`${title}: bootwright refuses what butane translates: ${undocumented.map((p) => `${p.at}: ${p.message}`).join('; ')}`);
        else refusals.push(`${title}: ${ours.problems.map((p) => p.at).join(', ')}`);
        continue;
      }
      try {
        assert.deepEqual(meaning(ours.config), meaning(JSON.parse(theirs.stdout)));
      } catch (e) {
        differ.push(`${title}: ${(e as Error).message.slice(0, 1500)}`);
      }
    }
    assert.deepEqual(differ, []);
    // The documented refusals seen: files-dir sugar (local, trees) and layout sugar (boot_device, with_mount_unit).
    assert.ok(refusals.length > 0 && refusals.length < configs.length / 2, refusals.join('\n'));
  });
});
