/**
 * The checks every corpus template's bootstrap data passes, whichever door it came
 * through (`renderNodeBootstrap` in test/capi/corpus.test.ts, the data Secret the
 * controller writes in test/controller/templates.test.ts): the real validators on the
 * document, then the kubeadm configuration as the node has it when kubeadm runs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { checkIgnitionRules } from '../../src/provision/ignition/rules.js';
import {
  CORPUS_DIR,
  type CorpusCase,
  cloudInitRender,
  fixtureFiles,
  INSTANCE_DATA,
  kubeadmDocuments,
  kubeadmValue,
  METADATA,
  registeredName,
  runTemplateCommands,
  strictKubeadmProblems,
} from './corpus.js';
import { cloudConfigFiles, ignitionFiles } from './decode.js';
import { cloudInitSchema, ignitionValidate, ignitionValidateKnows, kubeadmValidate, validateCloudConfigSchema, validateIgnitionSchema } from './validators.js';

/** cloudbase-init's cloud-config modules (cloudbaseinit/plugins/common/userdataplugins/cloudconfigplugins/factory.py). */
const CLOUDBASE_INIT_KEYS = new Set(['write_files', 'set_timezone', 'timezone', 'set_hostname', 'hostname', 'ntp', 'groups', 'users', 'runcmd']);

/** The template's preKubeadmCommands (CABPK runs them in one shell before kubeadm). */
function preKubeadmCommands(c: CorpusCase): string[] {
  const obj = load(readFileSync(new URL(c.file, CORPUS_DIR), 'utf8')) as { spec: Record<string, unknown> };
  const spec = (obj.spec.kubeadmConfigSpec ??
    ((obj.spec.template as { spec: Record<string, unknown> } | undefined)?.spec.kubeadmConfigSpec) ??
    (obj.spec.template as { spec: Record<string, unknown> } | undefined)?.spec) as { preKubeadmCommands?: string[] };
  return spec.preKubeadmCommands ?? [];
}

/** Every string under a parsed document. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(strings);
  return [];
}

/** The files of an Ignition config that it writes from data: URLs (remote sources are fetched on the node). */
function inlineFiles(config: { storage?: { files?: { contents?: { source?: string } }[] } }): Map<string, Buffer> {
  const files = (config.storage?.files ?? []).filter((f) => f.contents?.source === undefined || f.contents.source.startsWith('data:'));
  return ignitionFiles({ ...config, storage: { ...config.storage, files } });
}

/** The kubeadm configuration file among a node's files: the one holding an Init or Join configuration. */
function kubeadmFile(files: Map<string, Buffer>): [string, string] {
  const found = [...files].find(([, bytes]) => /^kind: (?:Init|Join)Configuration$/m.test(bytes.toString('utf8')));
  assert.ok(found, `no kubeadm configuration among ${[...files.keys()].join(', ')}`);
  return [found[0], found[1].toString('utf8')];
}

/**
 * Check one case's bootstrap data as the node would use it, with the real validators:
 * Ignition by its published schema, Ignition's rules and `ignition-validate`; cloud-config
 * by cloud-init's schema and `cloud-init schema` (rendered by `cloud-init devel render`
 * over the provider's instance data first); the kubeadm configuration, once boot-time
 * values are filled in, by kubeadm's strict types and the real kubeadm of the version;
 * then the case's own expectations (node name, kubeadm values, literal files).
 *
 * @param body the document (Ignition JSON, or cloud-config text)
 * @param ignitionVersion the Ignition spec of an Ignition body
 * @returns whether the real kubeadm read the configuration (false when it is not built)
 */
export async function checkServedData(c: CorpusCase, body: string, ignitionVersion: string | undefined, kubernetesVersion: string): Promise<boolean> {
  let files: Map<string, Buffer>;
  let document: string;
  if (c.format === 'ignition') {
    const version = ignitionVersion!;
    assert.deepEqual(validateIgnitionSchema(body, version), []);
    assert.deepEqual(checkIgnitionRules(JSON.parse(body)), []);
    if (ignitionValidateKnows(version)) assert.deepEqual(await ignitionValidate(body), []);
    files = inlineFiles(JSON.parse(body) as Parameters<typeof inlineFiles>[0]);
    document = body;
  } else {
    document = body;
    const jinja = document.startsWith('## template: jinja\n');
    if (c.instanceData) {
      assert.ok(jinja, 'a document using instance data starts with "## template: jinja"');
      const { rendered, stderr } = await cloudInitRender(document, INSTANCE_DATA[c.instanceData]!);
      assert.doesNotMatch(rendered, /CI_MISSING_JINJA_VAR/, stderr);
      document = rendered;
    } else if (c.format !== 'windows') {
      assert.ok(!jinja, 'a document without instance data has no Jinja header');
    }
    if (c.format === 'windows') {
      // cloudbase-init reads the same cloud-config through its own modules only.
      // Rendered over instance data when it reads any (cloudbase-init renders the same Jinja header).
      const body = document.startsWith('## template: jinja\n') ? document.slice(document.indexOf('\n') + 1) : document;
      const keys = Object.keys(load(body) as Record<string, unknown>);
      assert.deepEqual(keys.filter((k) => !CLOUDBASE_INIT_KEYS.has(k)), [], 'only modules cloudbase-init has');
      assert.deepEqual(validateCloudConfigSchema(body), []);
      files = cloudConfigFiles(body);
    } else {
      assert.deepEqual(validateCloudConfigSchema(document), []);
      assert.deepEqual(await cloudInitSchema(document), []);
      files = cloudConfigFiles(document);
    }
  }

  let [, kubeadm] = kubeadmFile(files);
  if (c.metadata) assert.match(kubeadm, /\$\{(?:COREOS|AFTERBURN)_[A-Z0-9_]+\}/, 'the kubeadm configuration is filled in on the node');
  if (c.format === 'ignition') kubeadm = await runTemplateCommands(kubeadm, preKubeadmCommands(c), c.metadata ? METADATA[c.metadata] : undefined, c.imds);
  assert.doesNotMatch(kubeadm, /\$\{COREOS_|\{\{ *(?:ds|v1)\.|@@HOSTNAME@@/, 'nothing is left to fill in');
  const docs = kubeadmDocuments(kubeadm);
  assert.deepEqual(strictKubeadmProblems(docs), []);
  // The real kubeadm of the template's Kubernetes minor (issue 28; test/support/tools.ts),
  // on the configuration as the node has it when kubeadm runs.
  const verdict = await kubeadmValidate(kubeadm, kubernetesVersion);
  if (verdict !== undefined) assert.deepEqual(verdict.problems, [], `${verdict.kubeadm} config validate`);
  if (c.nodeName) assert.equal(registeredName(docs), c.nodeName);
  for (const [where, value] of Object.entries(c.kubeadm ?? {})) assert.deepEqual(kubeadmValue(docs, where), value, where);
  const values = [...strings(c.format === 'ignition' ? JSON.parse(document) : load(c.format === 'windows' ? document.replace(/^## template: jinja\n/, '') : document)), ...[...files.values()].map((b) => b.toString('utf8'))];
  for (const text of c.documentHas ?? []) assert.ok(values.some((v) => v.includes(text)), `a value of the document holds ${text}`);
  const given = fixtureFiles(c.file);
  for (const p of c.literalFiles ?? []) {
    const content = given.find((f) => f.path === p)?.content;
    assert.ok(content !== undefined, `the template writes ${p}`);
    assert.equal(files.get(p)?.toString('utf8'), content, `${p} reaches the node as written`);
  }
  return verdict !== undefined;
}

