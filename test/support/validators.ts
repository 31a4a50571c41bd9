/**
 * The validators every output test uses (DESIGN §3: every output passes the real
 * validators, `cloud-init schema` and `ignition-validate`, and the published JSON
 * schemas, found as test/support/conformance.ts says).
 *
 * Two kinds:
 * - JSON-schema checks with ajv against the published schemas in the conformance
 *   directory (synchronous, in-process, cached): {@link validateCloudConfigSchema},
 *   {@link validateIgnitionSchema}.
 * - The real tools from Debian, run as child processes on a temp file:
 *   {@link cloudInitSchema} (`cloud-init schema`, 22.4) and {@link ignitionValidate}
 *   (`ignition-validate`, 2.14, specs 3.0.0–3.3.0 only: see {@link ignitionValidateKnows}).
 *
 * Every function returns a list of problems as strings; `[]` means valid.
 *
 * When a tool or a schema is missing: with `CI` set the function throws (CI must check
 * every output); elsewhere it prints one loud warning per process to stderr and returns
 * `[]`.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Ajv04Module from 'ajv-draft-04';
import type { ErrorObject, ValidateFunction } from 'ajv-draft-04';
import addFormatsModule from 'ajv-formats';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { cloudConfigSchemaFile, ignitionSchemaFile, schemaMissing } from './conformance.js';
import { inCI } from './missing.js';
import { kubeadmFor, referenceTool } from './tools.js';

// ajv and ajv-formats are CommonJS with `exports.default`; under NodeNext the default
// import is `module.exports`, whose `.default` is the class / plugin itself.
const Ajv04 = Ajv04Module.default;
const addFormats = addFormatsModule.default;

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** One ajv error as `"<instance path> <message>"`, with the offending key or allowed values. */
function formatAjvError(e: ErrorObject): string {
  const where = e.instancePath === '' ? '(root)' : e.instancePath;
  let msg = `${where} ${e.message ?? e.keyword}`;
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    msg += `: ${JSON.stringify(params.additionalProperty)}`;
  } else if (e.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    msg += `: ${JSON.stringify(params.allowedValues)}`;
  }
  return `${msg} (${e.schemaPath})`;
}

function ajvProblems(validate: ValidateFunction, value: unknown): string[] {
  if (validate(value)) return [];
  return [...new Set((validate.errors ?? []).map(formatAjvError))];
}

// ---------------------------------------------------------------------------------
// cloud-config: ajv against cloud-init's published schema

let cloudConfigValidator: ValidateFunction | null | undefined;

/**
 * The compiled cloud-config schema. The file declares draft-04 but also uses `$defs`
 * (reached through `$ref: "#/$defs/..."`, which ajv resolves as a JSON pointer),
 * `prefixItems` (a 2020-12 keyword that draft-04 ignores, as cloud-init's own
 * Draft4Validator does), annotation keywords of its own (`deprecated`, `changed`,
 * `label`, `hidden`...) and `additionalItems` next to a non-array `items`; so ajv runs
 * with `strict: false`. Formats (`uri`, `hostname`, `date`) come from ajv-formats.
 */
function cloudConfigSchemaValidator(): ValidateFunction | null {
  if (cloudConfigValidator === undefined) {
    const file = cloudConfigSchemaFile();
    if (!file) {
      schemaMissing("cloud-init's cloud-config JSON schema");
      return (cloudConfigValidator = null);
    }
    const schema = readJson(file);
    const ajv = new Ajv04({ strict: false, allErrors: true });
    addFormats(ajv);
    cloudConfigValidator = ajv.compile(schema);
  }
  return cloudConfigValidator;
}

/**
 * Check a cloud-config document against cloud-init's JSON schema
 * (`cloud-init/schema-cloud-config-v1.json`, newer and stricter than Debian's
 * cloud-init 22.4: unknown top-level keys are errors).
 *
 * The text must start with `#cloud-config\n`; it is parsed as YAML 1.1 (js-yaml's
 * YAML11_SCHEMA, as cloud-init reads it with PyYAML, so `0644` is an integer and `on`
 * a boolean) and must be a mapping.
 *
 * @param text the whole user-data document
 * @returns problems as `"<instance path> <message> (<schema path>)"`; `[]` when valid,
 *   or when the schema is not found outside CI (after one warning)
 * @throws AssertionError when the schema is not found and `CI` is set
 */
export function validateCloudConfigSchema(text: string): string[] {
  if (!text.startsWith('#cloud-config\n')) {
    return [`document must start with "#cloud-config\\n" (starts with ${JSON.stringify(text.slice(0, 20))})`];
  }
  let doc: unknown;
  try {
    doc = load(text, { schema: YAML11_SCHEMA });
  } catch (e) {
    // js-yaml throws on an empty document; cloud-init reports that as not a dict.
    if (text.replace(/^#.*$/gm, '').trim() === '') return ['Cloud-config is not a YAML dict (empty document)'];
    return [`not valid YAML: ${(e as Error).message}`];
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return [`Cloud-config is not a YAML dict (got ${Array.isArray(doc) ? 'a sequence' : doc === null ? 'null' : typeof doc})`];
  }
  const validate = cloudConfigSchemaValidator();
  return validate ? ajvProblems(validate, doc) : [];
}

// ---------------------------------------------------------------------------------
// Ignition: ajv (draft-04) against the spec's published schema

const ignitionValidators = new Map<string, ValidateFunction | null>();

/**
 * Check an Ignition config against the JSON schema (draft-04) of spec `version`
 * (`3.0.0`–`3.6.0` from `ignition-v3_N.schema.json`, `2.3.0` from `ignition-v2_3`).
 * Also checks that `ignition.version` is `version`. The schemas do not carry all of
 * Ignition's rules (absolute paths, duplicates, unit suffixes...): use
 * {@link ignitionValidate} too.
 *
 * @param json the config as serialised
 * @param version the spec version the config claims, e.g. `"3.4.0"`
 * @returns problems; `[]` when valid, or when the schema is not found outside CI (after
 *   one warning)
 * @throws Error when `version` is not a spec version; AssertionError when its schema is
 *   not found and `CI` is set
 */
export function validateIgnitionSchema(json: string, version: string): string[] {
  if (!/^(2\.3|3\.[0-6])\.0$/.test(version)) throw new Error(`no Ignition schema for spec version ${JSON.stringify(version)}`);
  let validate = ignitionValidators.get(version);
  if (validate === undefined) {
    const file = ignitionSchemaFile(version);
    if (!file) {
      schemaMissing(`the Ignition ${version} JSON schema`);
      ignitionValidators.set(version, null);
      return [];
    }
    const ajv = new Ajv04({ allErrors: true });
    addFormats(ajv);
    validate = ajv.compile(readJson(file));
    ignitionValidators.set(version, validate);
  }
  if (validate === null) return [];
  let config: unknown;
  try {
    config = JSON.parse(json);
  } catch (e) {
    return [`not valid JSON: ${(e as Error).message}`];
  }
  const problems = ajvProblems(validate, config);
  const claimed = (config as { ignition?: { version?: unknown } } | null)?.ignition?.version;
  if (claimed !== version) problems.push(`/ignition/version is ${JSON.stringify(claimed)}, expected ${JSON.stringify(version)}`);
  return problems;
}

// ---------------------------------------------------------------------------------
// The real tools

/** The executable `name` on `$PATH` (or in /usr/bin), or undefined. */
function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), '/usr/bin'];
  for (const dir of dirs) {
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

const cloudInitPath = findExecutable('cloud-init');
/**
 * The pinned `ignition-validate` of the reference tools (Ignition v2.26, specs
 * 3.0.0–3.6.0; test/support/tools.ts), else Debian's (Ignition 2.14, specs 3.0.0–3.3.0).
 */
const referenceIgnitionValidate = referenceTool('ignition-validate');
const ignitionValidatePath = referenceIgnitionValidate ?? findExecutable('ignition-validate');

/** Whether `cloud-init` (for `cloud-init schema`) is installed. */
export const haveCloudInit: boolean = cloudInitPath !== undefined;
/** Whether `ignition-validate` is installed. */
export const haveIgnitionValidate: boolean = ignitionValidatePath !== undefined;

const warned = new Set<string>();

/** A missing tool: throw in CI; elsewhere warn once per process (the caller returns []). */
function toolMissing(tool: string, what: string): void {
  if (inCI) {
    throw new Error(`${tool} is required in CI (install with apt-get install -y cloud-init ignition)`);
  }
  if (warned.has(tool)) return;
  warned.add(tool);
  process.stderr.write(`\n*** SKIPPED: ${tool} not installed; ${what} are NOT checked by the real validator ***\n\n`);
}

/** At most this many validator child processes at once (the suite calls these hundreds of times). */
const maxChildren = Math.max(2, os.availableParallelism());
let running = 0;
const queue: (() => void)[] = [];

async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= maxChildren) await new Promise<void>((resolve) => queue.push(resolve));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    queue.shift()?.();
  }
}

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Write `content` to `<fresh temp dir>/<name>`, run `file args... <that file>`, remove
 * the directory. Occurrences of the temp file's path in the output become `<name>`.
 */
async function runOnTempFile(file: string, args: string[], name: string, content: string): Promise<RunResult> {
  return limited(async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), `bootwright-validate-${process.pid}-`));
    const target = path.join(dir, name);
    try {
      await writeFile(target, content);
      const result = await new Promise<RunResult>((resolve, reject) => {
        execFile(
          file,
          [...args, target],
          {
            encoding: 'utf8',
            timeout: 120_000,
            maxBuffer: 64 * 1024 * 1024,
            env: { ...process.env, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', PYTHONIOENCODING: 'utf-8' },
          },
          (error, stdout, stderr) => {
            if (error && typeof error.code !== 'number') {
              reject(new Error(`${path.basename(file)} failed to run: ${error.message}`));
              return;
            }
            resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
          },
        );
      });
      const hide = (s: string) => s.split(target).join(`<${name}>`);
      return { code: result.code, stdout: hide(result.stdout), stderr: hide(result.stderr) };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
}

const CC_ERRORS = 'Cloud config schema errors: ';
const CC_DEPRECATIONS = 'Cloud config schema deprecations: ';

/**
 * cloud-init joins its problems with ", " (`<path>: <message>, <path>: <message>`);
 * split where the next part starts with a path and a colon (`runcmd: `,
 * `write_files.0.permissions: `, `format-l2.c9: `).
 */
function splitProblems(list: string): string[] {
  return list
    .split(/, (?=[A-Za-z0-9_.-]+: )/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The deprecations cloud-init printed on stdout (it prints the prefix even when there are none). */
function deprecationsIn(stdout: string): string[] {
  const at = stdout.indexOf(CC_DEPRECATIONS);
  if (at < 0) return [];
  let rest = stdout.slice(at + CC_DEPRECATIONS.length);
  const valid = rest.indexOf('\nValid cloud-config:');
  if (valid >= 0) rest = rest.slice(0, valid);
  return splitProblems(rest.trim()).map((p) => `deprecated: ${p}`);
}

/** Options for {@link cloudInitSchema}. */
export interface CloudInitSchemaOptions {
  /**
   * Count cloud-init's deprecation notices as problems. Default false: cloud-init
   * says "Valid cloud-config" and exits 0 with deprecations, and that counts as valid.
   */
  deprecationsAreProblems?: boolean;
}

/**
 * Run the real `cloud-init schema --config-file F` (Debian's cloud-init 22.4) on a
 * cloud-config document. It validates one file per run (~0.25 s of Python start-up);
 * calls run concurrently, a few child processes at a time.
 *
 * Valid means exit status 0 and "Valid cloud-config: F" on stdout. Otherwise its
 * complaints come from stderr (`Error:` then `Cloud config schema errors: <path>:
 * <message>, ...` or a message such as `Cloud-config is not a YAML dict.`), one
 * string per problem, with the temp file's path shown as `<user-data>`.
 *
 * @param text the whole user-data document (should start with `#cloud-config`)
 * @returns cloud-init's complaints; `[]` when it says valid, or when cloud-init is not
 *   installed outside CI (after one warning)
 * @throws Error when cloud-init is not installed and `CI` is set, or cannot be run
 */
export async function cloudInitSchema(text: string, options: CloudInitSchemaOptions = {}): Promise<string[]> {
  if (!cloudInitPath) {
    toolMissing('cloud-init', 'cloud-config outputs');
    return [];
  }
  const { code, stdout, stderr } = await runOnTempFile(cloudInitPath, ['schema', '--config-file'], 'user-data', text);
  const deprecations = options.deprecationsAreProblems ? deprecationsIn(stdout) : [];
  if (code === 0 && /^Valid cloud-config: /m.test(stdout)) return deprecations;

  const problems: string[] = [];
  const message = stderr.replace(/^Error:\s*\n/m, '').trim();
  for (const block of message.split(/\n\n(?=Cloud config schema )/)) {
    if (block.startsWith(CC_ERRORS)) problems.push(...splitProblems(block.slice(CC_ERRORS.length)));
    else if (block.startsWith(CC_DEPRECATIONS)) continue;
    else if (block.trim()) problems.push(block.trim());
  }
  if (problems.length === 0) {
    problems.push(`cloud-init schema exited ${code} without saying valid: ${(stdout + stderr).trim() || '(no output)'}`);
  }
  return [...problems, ...deprecations];
}

/**
 * The spec versions the ignition-validate in use accepts: the reference tools' (Ignition
 * v2.26) 3.0.0–3.6.0; Debian's 2.14, without them, 3.0.0–3.3.0. Neither reads 2.x. Under
 * CI the reference one is required (a 3.4.0+ config is never left to the schema alone).
 */
export const IGNITION_VALIDATE_SPECS: readonly string[] = referenceIgnitionValidate ? ['3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.4.0', '3.5.0', '3.6.0'] : ['3.0.0', '3.1.0', '3.2.0', '3.3.0'];

/** Whether {@link ignitionValidate} can check a config of this spec version (under CI: every 3.x, or it fails). */
export function ignitionValidateKnows(version: string): boolean {
  if (inCI && !referenceIgnitionValidate && version.startsWith('3.')) throw new Error('the reference ignition-validate (Ignition v2.26) is required in CI: npm run tools');
  return IGNITION_VALIDATE_SPECS.includes(version);
}

/**
 * Run the real `ignition-validate F` (the reference tools' Ignition v2.26, else Debian's
 * 2.14) on an Ignition config. It knows the specs of {@link IGNITION_VALIDATE_SPECS}
 * (see {@link ignitionValidateKnows}); other versions come back as `couldn't parse
 * config: unsupported config version`.
 *
 * It prints one line per problem on stdout (`error at $.storage.files.0.path, line 1
 * col 61: path not absolute`), parse failures on stderr; warnings (`warning at $.foo
 * ...: Unused key foo`, exit status 0) count as problems too.
 *
 * @param json the config as serialised
 * @returns every line it printed; `[]` when valid, or when ignition-validate is not
 *   installed outside CI (after one warning)
 * @throws Error when ignition-validate is not installed and `CI` is set, or cannot be run
 */
export async function ignitionValidate(json: string): Promise<string[]> {
  if (!ignitionValidatePath) {
    toolMissing('ignition-validate', 'Ignition outputs');
    return [];
  }
  const { code, stdout, stderr } = await runOnTempFile(ignitionValidatePath, [], 'config.ign', json);
  const problems = `${stdout}\n${stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (code !== 0 && problems.length === 0) problems.push(`ignition-validate exited ${code} with no output`);
  return problems;
}

/** What the real kubeadm said of a kubeadm configuration file. */
export interface KubeadmVerdict {
  /** The kubeadm that read it, by its name in the tools' bin directory (`kubeadm-1.N`, or `kubeadm`). */
  kubeadm: string;
  /** Why it refused the file (its `error: ...` line and any lines after it); `[]` when it printed `ok`. */
  problems: string[];
  /** Its klog warnings (`W... file.go:N] text`, the text only): deprecations, ignored documents. */
  warnings: string[];
}

/** klog's header: `W1204 04:02:45.098345   30401 common.go:100] `. */
const KLOG = /^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [^\]]+\] /;

/** Split kubeadm's output into its warnings and (when it failed) its problems. */
function kubeadmOutput(code: number, stdout: string, stderr: string): { problems: string[]; warnings: string[] } {
  const warnings: string[] = [];
  const rest: string[] = [];
  for (const line of `${stderr}\n${stdout}`.split('\n').map((l) => l.trimEnd())) {
    if (!line) continue;
    if (KLOG.test(line)) warnings.push(line.replace(KLOG, ''));
    else if (line !== 'ok' && !line.startsWith('To see the stack trace')) rest.push(line);
  }
  const problems = code === 0 ? [] : rest.length ? rest : [`kubeadm exited ${code} with no output`];
  return { problems, warnings };
}

/**
 * Run the real kubeadm's `kubeadm config validate --config F` (the reference tools'
 * kubeadm of the version's minor, else of the next minor: {@link kubeadmFor}) on a
 * kubeadm configuration file. kubeadm decodes strictly (unknown and duplicate fields
 * are errors), defaults, then validates (names, CIDRs, endpoints, tokens, the control
 * plane's version against its own skew policy).
 *
 * @param yaml the configuration file (a multi-document YAML stream)
 * @param kubernetesVersion the control plane's version, which picks the kubeadm
 * @returns its verdict, or undefined when no built kubeadm covers the version (the
 *   caller counts those; under CI the pinned minors must cover the suite's versions)
 * @throws Error when kubeadm cannot be run
 */
export async function kubeadmValidate(yaml: string, kubernetesVersion: string): Promise<KubeadmVerdict | undefined> {
  const kubeadm = kubeadmFor(kubernetesVersion);
  if (kubeadm === undefined) return undefined;
  const { code, stdout, stderr } = await runOnTempFile(kubeadm, ['config', 'validate', '--config'], 'kubeadm.yaml', yaml);
  return { kubeadm: path.basename(kubeadm), ...kubeadmOutput(code, stdout, stderr) };
}

/**
 * Run the real `kubeadm config migrate --old-config F` (kubeadm as {@link kubeadmValidate}
 * picks it): the file converted to kubeadm's newest API version, with every default
 * filled in. It says more than validate where a field survives decoding but not
 * conversion (a v1beta3 field v1beta4 has no place for).
 *
 * @returns its verdict and the new configuration on stdout (`migrated`, '' when it failed),
 *   or undefined when no built kubeadm covers the version
 * @throws Error when kubeadm cannot be run
 */
export async function kubeadmMigrate(yaml: string, kubernetesVersion: string): Promise<(KubeadmVerdict & { migrated: string }) | undefined> {
  const kubeadm = kubeadmFor(kubernetesVersion);
  if (kubeadm === undefined) return undefined;
  const { code, stdout, stderr } = await runOnTempFile(kubeadm, ['config', 'migrate', '--old-config'], 'kubeadm.yaml', yaml);
  return { kubeadm: path.basename(kubeadm), ...kubeadmOutput(code, '', stderr), migrated: code === 0 ? stdout : '' };
}

