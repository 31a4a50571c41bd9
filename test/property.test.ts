/**
 * Property tests for the whole pipeline (DESIGN §2–§3): random valid NodeBootstrap
 * requests render in both formats, pass every validator and carry the request's files
 * and commands byte for byte; random invalid requests (one mutation of a valid one) are
 * always refused with a RequestError naming the mutated field and never echoing a secret.
 *
 * Reproduce a failure with the seed and path fast-check prints:
 * `fc.assert(..., { seed, path })`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { RequestError } from '../src/errors.js';
import { checkIgnitionRules } from '../src/provision/ignition/rules.js';
import { renderNodeBootstrap } from '../src/render.js';
import { bootPathProblem } from '../src/provision/plan/protected.js';
import { parseNodeBootstrap, validateNodeBootstrap } from '../src/request/parse.js';
import { dumpYaml } from '../src/yaml/dump.js';
import { cloudConfigFiles, ignitionFiles } from './support/decode.js';
import { cloudInitSchema, ignitionValidate, ignitionValidateKnows, validateCloudConfigSchema, validateIgnitionSchema } from './support/validators.js';

type Obj = Record<string, unknown>;
type Role = 'init' | 'control-plane' | 'worker';

const NUM_RUNS = 100;
const SENTINEL = '/run/cluster-api/bootstrap-success.complete';
const IGNITION_VERSIONS = ['3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.4.0', '3.5.0', '3.6.0'] as const;

// ---------------------------------------------------------------------------------
// Small arbitraries

/** Text pieces that break naive YAML, shell, systemd or data-URL handling. */
const TRICKY = [
  ': ', '#', ' # not a comment', '"', "'", '%', '%%', '%n', '$(id -u)', '${HOME}', '`date`', '\r\n', '\n', '\t', '  ', '\\', '\\n',
  '😀', '👩‍👩‍👧', 'é', 'e\u0301', '日本', '\u0085', '\u2028', '\u2029', '\ufeff', '\0', '\x1b[0m', '\x7f', 'yes', 'on', '~', 'null',
  '0644', '1e3', '0o17', '- ', '---', '...', '|', '>-', '{a: b}', '[x]', '&anchor', '*alias', '!!binary', '? ', ',', '@', 'data:,',
  '%20', 'x'.repeat(120),
];

const fragment = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...TRICKY) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
);
/** Arbitrary unicode text, biased towards the pieces above. */
const text = fc.array(fragment, { maxLength: 10 }).map((a) => a.join(''));
/** One line: no CR or LF (other unicode line separators stay). */
const singleLine = text.map((s) => s.replace(/[\r\n]/g, ' '));
/** Commands hold no control character but TAB and LF (schema.ts `commandControlProblem`). */
const commandLine = singleLine.map((s) => s.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, ' '));
const command = fc.oneof({ weight: 3, arbitrary: commandLine }, { weight: 1, arbitrary: fc.array(commandLine, { minLength: 2, maxLength: 4 }).map((a) => a.join('\n')) });
const commands = fc.array(command, { maxLength: 4 });

const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  // compressible, so the gzip branches of the renderers are taken
  fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 200 })).map(([b, n]) => new Uint8Array(Buffer.concat(Array.from({ length: n }, () => Buffer.from(b))))),
);

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
const dnsSubdomain = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?){0,2}$/);
const token = fc.stringMatching(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const caCertHash = fc.tuple(hex64, fc.boolean()).map(([h, upper]) => `sha256:${upper ? h.toUpperCase() : h}`);
const ipv4 = fc.ipV4();
const hostname = fc.oneof(dnsSubdomain, fc.constantFrom('api.prod.example.com', 'cp.internal'));
const endpoint = fc.oneof(
  fc.tuple(fc.oneof(hostname, ipv4), fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })).map(([h, p]) => (p === undefined ? h : `${h}:${p}`)),
  fc.constantFrom('[fd00::1]:6443', '[2001:db8::10]', '10.0.0.1:443'),
);
/** POSIX user names as the schema takes them (`$` at the end allowed, for Samba machine accounts). */
const userName = fc.stringMatching(/^[a-z_][a-z0-9_-]{0,15}\$?$/);
const groupName = fc.stringMatching(/^[a-z_][a-z0-9_-]{0,15}$/);
const sshKey = fc
  .tuple(fc.constantFrom('ssh-ed25519', 'ssh-rsa', 'ecdsa-sha2-nistp256'), fc.uint8Array({ minLength: 16, maxLength: 48 }), fc.option(fc.stringMatching(/^[a-z]{1,8}@[a-z]{1,8}$/), { nil: undefined }))
  .map(([type, key, comment]) => `${type} ${Buffer.from(key).toString('base64')}${comment ? ` ${comment}` : ''}`);
const passwdHash = fc.tuple(fc.stringMatching(/^[A-Za-z0-9./]{8,16}$/), fc.stringMatching(/^[A-Za-z0-9./]{86}$/)).map(([salt, h]) => `$6$${salt}$${h}`);
/** A gecos that /etc/passwd can hold: no `:` and no line break. */
const gecos = fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => s.replace(/[:\x00-\x1f\x7f-\x9f\u2028\u2029]/g, ''));
const sudoRule = fc.constantFrom('ALL=(ALL) NOPASSWD:ALL', 'ALL=(ALL:ALL) ALL', 'ALL=(root) NOPASSWD: /usr/bin/systemctl restart kubelet');
const pathSegment = fc.oneof(
  { weight: 8, arbitrary: fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._@+-]{0,12}$/) },
  {
    weight: 1,
    arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }).filter((s) => !s.includes('/') && !/[\x00-\x1f\x7f-\x9f]/.test(s) && s !== '.' && s !== '..'),
  },
);

/**
 * Draws values for the mutations of invalid requests. Like `fc.gen()`, but from a fixed
 * seed that is not shrunk: `fc.gen()` shrinks poorly (and for a long time) here, while
 * the valid request the mutation starts from shrinks well on its own.
 */
type Draw = <T, A extends unknown[]>(arb: (...args: A) => fc.Arbitrary<T>, ...args: A) => T;

function seededDraw(seed: number): Draw {
  let n = 0;
  return (arb, ...args) => fc.sample(arb(...args), { seed: seed + n++, numRuns: 1 })[0]!;
}

/** Choose one of `values`. */
const pick = <T>(g: Draw, values: readonly T[]): T => g(() => fc.constantFrom(...values));
/** True with probability `percent` in 100. */
const chance = (g: Draw, percent: number): boolean => g(() => fc.integer({ min: 0, max: 99 })) < percent;

/** Directories the outputs write files into (bootwright's own, PKI, sudoers drop-ins, units, timesyncd drop-ins). */
const OUTPUT_DIRECTORIES = ['/etc/kubeadm', '/run/kubeadm', '/run/cluster-api', '/etc/kubernetes', '/etc/kubernetes/pki', '/etc/sudoers.d', '/etc/systemd', '/etc/systemd/system', '/etc/systemd/timesyncd.conf.d'];

// ---------------------------------------------------------------------------------
// Valid requests

/** A generated valid request and what a node must end up with. */
interface ValidCase {
  value: Obj;
  role: Role;
  /** Every request file and the exact bytes it must have on the node. */
  files: { path: string; bytes: Buffer }[];
  boot: string[];
  pre: string[];
  post: string[];
  /** `ignitionVersion` render option; undefined leaves it to `spec.output` or the lowest spec. */
  ignitionVersion?: string;
  /** The version the Ignition render must use, when one is requested. */
  expectIgnitionVersion?: string;
  /** Request fields an Ignition renderer legitimately refuses ([] when it must render). */
  ignitionRefuses: string[];
  /** Some file content is a Uint8Array (YAML !!binary), which JSON cannot carry. */
  binary: boolean;
  /** Secret values of the request. */
  secrets: string[];
}

interface ValidOptions {
  /** Allow Uint8Array (`!!binary`) content with `encoding: gzip`. Default true. */
  binary?: boolean;
  /**
   * Allow features Ignition refuses (files under /run or /tmp, `inactive`, mbr tables,
   * `replaceFS`, multi-partition layouts). Default true.
   */
  refusable?: boolean;
}

/** A path a valid request may give a file: none bootwright writes itself (src/provision/plan/protected.ts). */
function pathOk(path: string): boolean {
  return bootPathProblem(path, 'file') === undefined && !OUTPUT_DIRECTORIES.includes(path);
}

const opt = <T>(arb: fc.Arbitrary<T>, freq = 2) => fc.option(arb, { nil: undefined, freq });

/** One user, before it gets its index; `refusable` allows what Ignition refuses. */
const userSpec = (refusable: boolean) =>
  fc.record({
    name: userName,
    gecos: opt(gecos),
    groups: opt(fc.tuple(fc.uniqueArray(groupName, { minLength: 1, maxLength: 3 }), fc.constantFrom(',', ', ')).map(([gs, sep]) => gs.join(sep))),
    homeDir: fc.boolean(),
    shell: opt(fc.constantFrom('/bin/bash', '/bin/sh', '/usr/sbin/nologin')),
    passwd: opt(passwdHash, 3),
    lockPassword: opt(fc.boolean(), 3),
    primaryGroup: opt(groupName, 4),
    sudo: opt(sudoRule),
    /** Keys, sometimes with a repeat (Ignition needs them unique). */
    sshAuthorizedKeys: opt(fc.tuple(fc.array(sshKey, { minLength: 1, maxLength: 3 }), fc.boolean()).map(([keys, repeat]) => (repeat ? [...keys, keys[0]!] : keys))),
    inactive: opt(refusable ? fc.boolean() : fc.constant(false), 6),
  });

/**
 * How many leading runcmd items are bootwright's `chown -- user:group /dir…` of the
 * directories above a created user's files (cloud-config renderer `directoryCommands`).
 */
function generatedChowns(runcmd: readonly unknown[]): number {
  let n = 0;
  while (typeof runcmd[n] === 'string' && /^chown -- \S+ \S/.test(runcmd[n] as string)) n++;
  return n;
}

/** How a file's content is given, and the bytes the node must get. */
const fileContent = (binaryOk: boolean) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('text' as const), text, omitWhenEmpty: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('base64' as const), bytes, wrap: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('gzip+base64' as const), bytes }) },
    { weight: binaryOk ? 1 : 0, arbitrary: fc.record({ kind: fc.constant('gzip' as const), bytes }) },
  );

/** One file: where (an index into the bases, so it can follow the users), what, how. */
const fileSpec = (binaryOk: boolean, refusable: boolean) =>
  fc.record({
    where: fc.oneof(
      { weight: 10, arbitrary: fc.record({ kind: fc.constant('normal' as const), base: fc.nat(), segments: fc.array(pathSegment, { minLength: 1, maxLength: 3 }) }) },
      { weight: refusable ? 1 : 0, arbitrary: fc.record({ kind: fc.constant('tmpfs' as const), base: fc.constantFrom('/run', '/tmp', '/var/run'), segments: fc.tuple(pathSegment) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('output directory' as const), path: fc.constantFrom(...OUTPUT_DIRECTORIES) }) },
    ),
    content: fileContent(binaryOk),
    permissions: opt(fc.constantFrom('0600', '0644', '0755', '0640'), 3),
    owner: opt(fc.nat()),
    append: opt(fc.boolean(), 6),
  });

const diskSpec = (refusable: boolean) =>
  fc.record({
    device: fc.constantFrom('/dev/sdb', '/dev/vdb', '/dev/nvme1n1', '/dev/disk/by-id/virtio-data'),
    layout: fc.constantFrom('true', 'false', 'one', ...(refusable ? ['two'] : [])),
    partitionType: opt(fc.constantFrom('83', '8e', '0FC63DAF-8483-4772-8E79-3D69D8477DE4')),
    tableType: opt(fc.constantFrom('gpt', ...(refusable ? ['mbr'] : []))),
    overwrite: opt(fc.boolean()),
    filesystem: fc.constantFrom('ext4', 'xfs'),
    partition: fc.constantFrom('auto', 'any', 'none', '1'),
    fsOverwrite: opt(fc.boolean()),
    extraOpts: fc.boolean(),
    replaceFS: refusable ? fc.boolean() : fc.constant(false),
    mount: opt(fc.boolean()),
  });

/** The independent parts of a valid request: each shrinks on its own. */
function validCaseParts(binaryOk: boolean, refusable: boolean) {
  return fc.record({
    role: fc.constantFrom<Role>('init', 'control-plane', 'worker'),
    name: dnsLabel,
    labels: fc.boolean(),
    version: fc.record({
      minor: fc.integer({ min: 22, max: 36 }),
      patch: fc.integer({ min: 0, max: 20 }),
      prefix: fc.constantFrom('v', ''),
      suffix: fc.constantFrom('', '-rc.1', '-beta.0', '-alpha.2', '+build.7'),
    }),
    pin: opt(fc.nat(), 3),
    verbosity: opt(fc.integer({ min: 0, max: 10 }), 4),
    cluster: fc.record({
      name: dnsSubdomain,
      endpoint,
      network: opt(
        fc.record(
          {
            podSubnet: fc.constantFrom('192.168.0.0/16', '10.244.0.0/16', '10.244.0.0/16,fd00:10:244::/56'),
            serviceSubnet: fc.constantFrom('10.96.0.0/12', '10.96.0.0/16,fd00:10:96::/112'),
            dnsDomain: dnsSubdomain,
          },
          { requiredKeys: [] },
        ),
        3,
      ),
      token,
      hashes: fc.array(caCertHash, { minLength: 1, maxLength: 3 }),
      certificateKey: hex64,
      /** On an init node: which of endpoint, token, hashes, certificateKey it gives. */
      initGives: fc.record({ endpoint: fc.boolean(), token: fc.boolean(), hashes: fc.boolean(), certificateKey: fc.boolean() }),
    }),
    users: fc.uniqueArray(userSpec(refusable), {
      maxLength: 3,
      selector: (u) => u.name,
    }),
    files: fc.array(fileSpec(binaryOk, refusable), { maxLength: 5 }),
    boot: commands,
    pre: commands,
    post: commands,
    /** Give empty lists and an empty provisioning object explicitly. */
    explicitEmpty: fc.boolean(),
    ntp: opt(fc.record({ enabled: opt(fc.boolean()), servers: opt(fc.uniqueArray(fc.oneof(hostname, ipv4, fc.constant('time.cloudflare.com')), { maxLength: 3 })) }), 3),
    disk: opt(diskSpec(refusable), 6),
    ignition: fc.record({ how: fc.constantFrom('none', 'option', 'output'), version: fc.constantFrom(...IGNITION_VERSIONS), format: fc.constantFrom('cloud-config', 'ignition') }),
  });
}

type Parts = ReturnType<typeof validCaseParts> extends fc.Arbitrary<infer T> ? T : never;

/** Valid requests (DESIGN §2) with what a node must end up with. */
function validCase(options: ValidOptions = {}): fc.Arbitrary<ValidCase> {
  const { binary = true, refusable = true } = options;
  return validCaseParts(binary, refusable).map(buildValidCase);
}

/** Assemble a request from its parts; users may own files, files may live in their homes. */
function buildValidCase(p: Parts): ValidCase {
  const { role } = p;
  const ignitionRefuses: string[] = [];
  const secrets: string[] = [];
  const join = role !== 'init';

  const { minor } = p.version;
  const kubernetesVersion = `${p.version.prefix}1.${minor}.${p.version.patch}${p.version.suffix}`;
  const pins = [...(minor < 36 ? ['kubeadm.k8s.io/v1beta3'] : []), ...(minor >= 31 ? ['kubeadm.k8s.io/v1beta4'] : [])];
  const kubeadm: Obj = {};
  if (p.pin !== undefined) kubeadm.apiVersion = pins[p.pin % pins.length];
  if (p.verbosity !== undefined) kubeadm.verbosity = p.verbosity;

  const c = p.cluster;
  const cluster: Obj = { name: c.name };
  if (join || c.initGives.endpoint) cluster.controlPlaneEndpoint = c.endpoint;
  if (c.network) cluster.network = c.network;
  if (join || c.initGives.token) {
    cluster.bootstrapToken = c.token;
    secrets.push(c.token);
  }
  if (join || c.initGives.hashes) cluster.caCertHashes = c.hashes;
  if (role === 'control-plane' || (role === 'init' && c.initGives.certificateKey)) {
    cluster.certificateKey = c.certificateKey;
    secrets.push(c.certificateKey);
  }

  const names = p.users.map((u) => u.name);
  const users: Obj[] = p.users.map((spec, i) => {
    const at = `spec.provisioning.users[${i}]`;
    const u: Obj = { name: spec.name };
    if (spec.gecos !== undefined) u.gecos = spec.gecos;
    if (spec.groups !== undefined) u.groups = spec.groups;
    if (spec.homeDir) u.homeDir = `/home/${spec.name}`;
    if (spec.shell !== undefined) u.shell = spec.shell;
    if (spec.passwd !== undefined) {
      u.passwd = spec.passwd;
      secrets.push(spec.passwd);
    }
    if (spec.lockPassword !== undefined) u.lockPassword = spec.lockPassword;
    if (spec.primaryGroup !== undefined) u.primaryGroup = spec.primaryGroup;
    if (spec.sudo !== undefined) u.sudo = spec.sudo;
    if (spec.sshAuthorizedKeys !== undefined) u.sshAuthorizedKeys = spec.sshAuthorizedKeys;
    if (spec.inactive !== undefined) {
      u.inactive = spec.inactive;
      if (spec.inactive) ignitionRefuses.push(`${at}.inactive`);
    }
    return u;
  });

  const bases = ['/etc', '/opt', '/var/lib', ...names.map((n) => `/home/${n}`)];
  const owners = ['root', 'root:root', ...names.flatMap((n) => [n, `${n}:${n}`, `${n}:root`])];
  const taken: string[] = [];
  let binary = false;
  const files: ValidCase['files'] = [];
  const fileValues: Obj[] = [];
  for (const spec of p.files) {
    const w = spec.where;
    const path = w.kind === 'output directory' ? w.path : [w.kind === 'normal' ? bases[w.base % bases.length]! : w.base, ...w.segments].join('/');
    // unique, and no file where another needs a directory
    if (!pathOk(path) || taken.some((t) => t === path || path.startsWith(`${t}/`) || t.startsWith(`${path}/`))) continue;
    taken.push(path);
    const i = fileValues.length;
    const f: Obj = { path };
    const content = spec.content;
    let expected: Buffer;
    if (content.kind === 'text') {
      expected = utf8(content.text);
      if (content.text !== '' || !content.omitWhenEmpty) f.content = content.text;
    } else {
      expected = Buffer.from(content.bytes);
      f.encoding = content.kind;
      if (content.kind === 'base64') {
        const b64 = expected.toString('base64');
        f.content = content.wrap ? (b64.match(/.{1,76}/g) ?? []).join('\n') : b64; // MIME-style lines
      } else if (content.kind === 'gzip+base64') {
        f.content = gzipSync(expected).toString('base64');
      } else {
        f.content = new Uint8Array(gzipSync(expected)); // YAML !!binary
        binary = true;
      }
    }
    if (spec.permissions !== undefined) f.permissions = spec.permissions;
    if (spec.owner !== undefined) f.owner = owners[spec.owner % owners.length];
    if (spec.append !== undefined) f.append = spec.append;
    if (['/run/', '/tmp/', '/var/run/'].some((t) => path.startsWith(t))) ignitionRefuses.push(`spec.provisioning.files[${i}].path`);
    files.push({ path, bytes: expected });
    fileValues.push(f);
  }

  const provisioning: Obj = {};
  const give = (key: string, value: unknown[]) => {
    if (value.length || p.explicitEmpty) provisioning[key] = value;
  };
  give('files', fileValues);
  give('users', users);
  give('bootCommands', p.boot);
  give('preKubeadmCommands', p.pre);
  give('postKubeadmCommands', p.post);
  if (p.ntp) {
    provisioning.ntp = {
      ...(p.ntp.enabled !== undefined ? { enabled: p.ntp.enabled } : {}),
      ...(p.ntp.servers !== undefined ? { servers: p.ntp.servers } : {}),
    };
  }

  if (p.disk) {
    const d = p.disk;
    const at = 'spec.provisioning.diskSetup';
    const partition: Obj = { device: d.device };
    let count: number;
    if (d.layout === 'true' || d.layout === 'false') {
      partition.layout = d.layout === 'true';
      count = d.layout === 'true' ? 1 : 0;
    } else if (d.layout === 'one') {
      partition.diskLayout = [{ percentage: 100, ...(d.partitionType !== undefined ? { partitionType: d.partitionType } : {}) }];
      count = 1;
    } else {
      partition.diskLayout = [{ percentage: 30 }, { percentage: 70, partitionType: '82' }];
      count = 2;
      ignitionRefuses.push(`${at}.partitions[0].diskLayout`);
    }
    if (d.tableType !== undefined) {
      partition.tableType = d.tableType;
      // `layout: false` writes no table (no Ignition disk entry), so its table type is moot.
      if (d.tableType === 'mbr' && d.layout !== 'false') ignitionRefuses.push(`${at}.partitions[0].tableType`);
    }
    if (d.overwrite !== undefined) partition.overwrite = d.overwrite;
    // `none` on a disk the request partitions is refused (rule filesystem-whole-disk); `auto`
    // and `any` there are its partition 1, as cloud-init picks it (plan/devices.ts).
    const part = count === 0 ? 'none' : d.partition === 'none' ? '1' : d.partition;
    const filesystem: Obj = { device: d.device, filesystem: d.filesystem, label: 'data', partition: part };
    if (d.fsOverwrite !== undefined) filesystem.overwrite = d.fsOverwrite;
    if (d.extraOpts) filesystem.extraOpts = ['-E', 'lazy_itable_init=1'];
    if (d.replaceFS) {
      filesystem.replaceFS = 'ntfs';
      ignitionRefuses.push(`${at}.filesystems[0].replaceFS`);
    }
    provisioning.diskSetup = { partitions: [partition], filesystems: [filesystem] };
    if (d.mount !== undefined) provisioning.mounts = [['LABEL=data', '/mnt/data', ...(d.mount ? ['auto', 'defaults,nofail', '0', '2'] : [])]];
  }

  const spec: Obj = { role, kubernetesVersion, cluster };
  if (Object.keys(kubeadm).length) spec.kubeadm = kubeadm;
  if (Object.keys(provisioning).length || p.explicitEmpty) spec.provisioning = provisioning;

  // Ignition spec: from the render option, from spec.output, or the lowest that fits
  const { how, version, format } = p.ignition;
  if (how === 'output') spec.output = { format, ignitionVersion: version };

  const metadata: Obj = { name: p.name, ...(p.labels ? { labels: { 'topology.kubernetes.io/zone': 'zone-a' } } : {}) };
  return {
    value: { apiVersion: 'bootwright.dev/v1alpha1', kind: 'NodeBootstrap', metadata, spec },
    role,
    files,
    boot: p.boot,
    pre: p.pre,
    post: p.post,
    ...(how === 'option' ? { ignitionVersion: version } : {}),
    ...(how !== 'none' ? { expectIgnitionVersion: version } : {}),
    ignitionRefuses,
    binary,
    secrets,
  };
}

// ---------------------------------------------------------------------------------
// Checks on outputs

const utf8 = (s: string) => Buffer.from(s, 'utf8');
const lines = (cmds: readonly string[]) => utf8(cmds.map((c) => `${c}\n`).join(''));

/** Paths where one is an ancestor of the other: a file that would also have to be a directory. */
function nestedPaths(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const a of paths) for (const b of paths) if (b.startsWith(`${a}/`)) out.push(`${a} is a file and also holds ${b}`);
  return out;
}

/** Every file must decode to exactly the request's bytes. */
function assertFiles(got: Map<string, Buffer>, expected: ValidCase['files'], format: string): void {
  for (const f of expected) {
    const bytes = got.get(f.path);
    assert.ok(bytes, `${format}: ${JSON.stringify(f.path)} is missing`);
    assert.ok(bytes.equals(f.bytes), `${format}: ${JSON.stringify(f.path)} holds ${bytes.toString('hex').slice(0, 80)}, expected ${f.bytes.toString('hex').slice(0, 80)}`);
  }
}

function checkCloudConfig(c: ValidCase, body: string): void {
  assert.ok(body.startsWith('#cloud-config\n') && body.endsWith('\n'), 'header and final newline');
  assert.deepEqual(validateCloudConfigSchema(body), [], 'cloud-config schema');
  const files = cloudConfigFiles(body);
  assertFiles(files, c.files, 'cloud-config');
  assert.deepEqual(nestedPaths([...files.keys()]), [], 'cloud-config write_files paths');

  const doc = load(body, { schema: YAML11_SCHEMA }) as { runcmd: unknown[]; bootcmd?: unknown[] };
  // The chown of directories above a created user's files comes first (see generatedChowns).
  const runcmd = doc.runcmd.slice(generatedChowns(doc.runcmd));
  assert.equal(runcmd.length, c.pre.length + 1 + c.post.length, 'runcmd length');
  assert.deepEqual(runcmd.slice(0, c.pre.length), c.pre, 'pre commands first, exactly');
  assert.deepEqual(runcmd.slice(c.pre.length + 1), c.post, 'post commands last, exactly');
  const action = c.role === 'init' ? 'init --config /run/kubeadm/kubeadm.yaml' : 'join --config /run/kubeadm/kubeadm-join-config.yaml';
  const main = runcmd[c.pre.length];
  assert.ok(typeof main === 'string' && main.startsWith(`kubeadm ${action}`) && main.endsWith(` && echo success > ${SENTINEL}`), `kubeadm line: ${String(main)}`);
  assert.deepEqual(doc.bootcmd ?? [], c.boot, 'bootcmd');
}

async function checkIgnition(c: ValidCase, body: string, version: string): Promise<void> {
  assert.ok(body.endsWith('\n'));
  if (c.expectIgnitionVersion) assert.equal(version, c.expectIgnitionVersion, 'requested spec version');
  assert.deepEqual(validateIgnitionSchema(body, version), [], `Ignition ${version} schema`);
  const config = JSON.parse(body) as Obj;
  assert.deepEqual(checkIgnitionRules(config), [], 'Ignition rules');
  if (ignitionValidateKnows(version)) assert.deepEqual(await ignitionValidate(body), [], 'ignition-validate');

  const files = ignitionFiles(config);
  assertFiles(files, c.files, 'Ignition');
  const units = ((config.systemd as { units?: { name: string }[] } | undefined)?.units ?? []).map((u) => `/etc/systemd/system/${u.name}`);
  assert.deepEqual(nestedPaths([...files.keys(), ...units]), [], 'Ignition paths');

  const script = files.get('/etc/kubeadm/bootstrap.sh');
  assert.ok(script, 'bootstrap.sh');
  // The groups script runs first when a user has groups (src/provision/ignition/groups.ts).
  const users = ((c.value.spec as Obj).provisioning as { users?: { groups?: string; primaryGroup?: string }[] } | undefined)?.users ?? [];
  const groups = users.some((u) => (u.groups ?? '').split(',').some((g) => g.trim() !== '') || u.primaryGroup !== undefined);
  const head = Buffer.concat([utf8(`#!/bin/sh\n${groups ? '/bin/sh /etc/kubeadm/groups.sh\n' : ''}`), lines(c.pre)]);
  const tail = lines(c.post);
  assert.ok(script.length >= head.length + tail.length, 'bootstrap.sh too short');
  assert.ok(script.subarray(0, head.length).equals(head), 'bootstrap.sh starts with the pre commands, as given');
  assert.ok(script.subarray(script.length - tail.length).equals(tail), 'bootstrap.sh ends with the post commands, as given');
  const middle = script.subarray(head.length, script.length - tail.length).toString('utf8');
  const configPath = c.role === 'init' ? '/etc/kubeadm/kubeadm.yaml' : '/etc/kubeadm/kubeadm-join-config.yaml';
  const action = c.role === 'init' ? 'init' : 'join';
  assert.match(middle, new RegExp(`^mkdir -p /run/cluster-api\\nkubeadm ${action}( --[a-z-]+(=\\d+)?)* --config ${configPath} && echo success > ${SENTINEL}\\n$`));
  const bootcmd = files.get('/etc/kubeadm/bootcmd.sh');
  if (c.boot.length) assert.ok(bootcmd?.equals(Buffer.concat([utf8('#!/bin/sh\n'), lines(c.boot)])), 'bootcmd.sh holds the boot commands');
  else assert.equal(bootcmd, undefined);
}

/** Validate, render both formats (twice), and check everything DESIGN §3 promises. */
async function checkValid(c: ValidCase): Promise<void> {
  const req = validateNodeBootstrap(c.value);
  if (!c.binary) {
    assert.deepEqual(parseNodeBootstrap(JSON.stringify(c.value), 'json'), req, 'JSON text reads as the same request');
    assert.deepEqual(parseNodeBootstrap(dumpYaml(c.value), 'yaml'), req, 'YAML text reads as the same request');
  }
  const again = () => validateNodeBootstrap(structuredClone(c.value));

  const cc = renderNodeBootstrap(req, { format: 'cloud-config' });
  assert.equal(renderNodeBootstrap(again(), { format: 'cloud-config' }).body, cc.body, 'cloud-config is deterministic');
  checkCloudConfig(c, cc.body);
  for (const secret of c.secrets) assert.ok(!cc.warnings.some((w) => w.includes(secret)), 'a warning echoes a secret');

  const options = { format: 'ignition' as const, ...(c.ignitionVersion !== undefined ? { ignitionVersion: c.ignitionVersion } : {}) };
  if (c.ignitionRefuses.length) {
    assert.throws(
      () => renderNodeBootstrap(req, options),
      (e: unknown) => {
        assert.ok(e instanceof RequestError, `expected RequestError, got ${String(e)}`);
        const unexpected = e.problems.filter((p) => !c.ignitionRefuses.includes(p.path));
        assert.deepEqual(unexpected, [], `Ignition refused only ${c.ignitionRefuses.join(', ')}`);
        return true;
      },
    );
    return;
  }
  const ign = renderNodeBootstrap(req, options);
  assert.equal(renderNodeBootstrap(again(), options).body, ign.body, 'Ignition is deterministic');
  assert.ok(ign.ignitionVersion);
  await checkIgnition(c, ign.body, ign.ignitionVersion);
}

// ---------------------------------------------------------------------------------
// Invalid requests: one mutation of a valid one

type Expectation = { path: string } | { root: true } | { malformed: 'JSON' | 'YAML'; line?: number };

interface InvalidCase {
  mutation: string;
  input: { value: unknown } | { text: string; syntax: 'json' | 'yaml' };
  expect: Expectation;
  secrets: string[];
}

/** Every field name the schema knows: an "unknown field" must be none of these. */
const KNOWN_FIELDS = new Set(
  (
    'apiVersion kind metadata name labels annotations spec role kubernetesVersion cluster controlPlaneEndpoint network podSubnet serviceSubnet dnsDomain ' +
    'bootstrapToken caCertHashes certificateKey certificates ca etcdCA frontProxyCA serviceAccount cert key kubeadm clusterConfiguration initConfiguration ' +
    'joinConfiguration verbosity provisioning files path content encoding owner permissions append bootCommands preKubeadmCommands postKubeadmCommands ' +
    'users gecos groups homeDir inactive shell passwd primaryGroup lockPassword sudo sshAuthorizedKeys ntp enabled servers diskSetup partitions device ' +
    'layout diskLayout percentage partitionType overwrite tableType filesystems filesystem label partition replaceFS extraOpts mounts output format ignitionVersion'
  ).split(' '),
);
const TYPOS = ['permission', 'encodng', 'preKubeadmCommand', 'sshKeys', 'bootstrap_token', 'caCertHash', 'kubernetes_version', 'Role', 'hostname', 'extraArgs', 'contents'];

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const obj = (v: unknown): Obj => {
  assert.ok(isObj(v));
  return v;
};
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The objects of a request where a strict schema applies, with their paths. */
function strictObjects(v: Obj): [string, Obj][] {
  const spec = obj(v.spec);
  const cluster = obj(spec.cluster);
  const prov = isObj(spec.provisioning) ? spec.provisioning : undefined;
  const out: [string, Obj][] = [['', v], ['metadata', obj(v.metadata)], ['spec', spec], ['spec.cluster', cluster]];
  if (isObj(cluster.network)) out.push(['spec.cluster.network', cluster.network]);
  if (isObj(spec.kubeadm)) out.push(['spec.kubeadm', spec.kubeadm]);
  if (isObj(spec.output)) out.push(['spec.output', spec.output]);
  if (prov) {
    out.push(['spec.provisioning', prov]);
    list(prov.files).forEach((f, i) => out.push([`spec.provisioning.files[${i}]`, obj(f)]));
    list(prov.users).forEach((u, i) => out.push([`spec.provisioning.users[${i}]`, obj(u)]));
    if (isObj(prov.ntp)) out.push(['spec.provisioning.ntp', prov.ntp]);
    if (isObj(prov.diskSetup)) {
      out.push(['spec.provisioning.diskSetup', prov.diskSetup]);
      list(prov.diskSetup.partitions).forEach((p, i) => out.push([`spec.provisioning.diskSetup.partitions[${i}]`, obj(p)]));
      list(prov.diskSetup.filesystems).forEach((f, i) => out.push([`spec.provisioning.diskSetup.filesystems[${i}]`, obj(f)]));
    }
  }
  return out;
}

/** The provisioning files list, created when missing. */
function filesOf(v: Obj): Obj[] {
  const spec = obj(v.spec);
  spec.provisioning ??= {};
  const prov = obj(spec.provisioning);
  prov.files ??= [];
  return prov.files as Obj[];
}

/** One file index (adding a plain file when there is none). */
function someFile(g: Draw, v: Obj): number {
  const files = filesOf(v);
  if (files.length === 0) files.push({ path: '/etc/motd', content: 'hello\n' });
  return g(fc.integer, { min: 0, max: files.length - 1 });
}

/** The provisioning users (none when the request has no such list). */
const usersOf = (v: Obj): Obj[] => {
  const prov = isObj(v.spec) ? v.spec.provisioning : undefined;
  return (isObj(prov) ? list(prov.users) : []).filter(isObj);
};

/** Secret values in a request (tokens, certificate keys, password hashes), at least 8 characters. */
function secretsIn(v: unknown): string[] {
  if (!isObj(v) || !isObj(v.spec) || !isObj(v.spec.cluster)) return [];
  const out = [v.spec.cluster.bootstrapToken, v.spec.cluster.certificateKey, ...usersOf(v).map((u) => u.passwd)];
  return out.filter((s): s is string => typeof s === 'string' && s.length >= 8);
}

type Mutation = (g: Draw, v: Obj, c: ValidCase) => Expectation;

const MUTATIONS: Record<string, Mutation> = {
  'unknown field': (g, v) => {
    const [at, target] = pick(g, strictObjects(v));
    const key = g(() => fc.oneof(fc.constantFrom(...TYPOS), fc.stringMatching(/^x[A-Za-z0-9_]{0,10}$/)).filter((k) => !KNOWN_FIELDS.has(k) && !(k in target)));
    target[key] = g(() => fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.constant({ a: 1 })));
    return { path: at ? `${at}.${key}` : key };
  },
  'wrong type': (g, v) => {
    const spec = obj(v.spec);
    const cluster = obj(spec.cluster);
    const options: (() => string)[] = [
      () => ((obj(v.metadata).name = 42), 'metadata.name'),
      () => ((spec.role = pick(g, [true, 'master', 'Worker', ''])), 'spec.role'),
      () => ((spec.kubernetesVersion = 1.33), 'spec.kubernetesVersion'),
      () => ((spec.cluster = 'prod'), 'spec.cluster'),
      () => ((cluster.caCertHashes = `sha256:${'a'.repeat(64)}`), 'spec.cluster.caCertHashes'),
      () => ((cluster.caCertHashes = []), 'spec.cluster.caCertHashes'),
      () => ((cluster.controlPlaneEndpoint = pick(g, ['https://api:6443', 'api:99999', 'api:', 6443])), 'spec.cluster.controlPlaneEndpoint'),
      () => ((spec.provisioning = pick(g, [[], 'files', 1])), 'spec.provisioning'),
      () => ((obj(spec.provisioning ?? (spec.provisioning = {})).files = { path: '/etc/x' }), 'spec.provisioning.files'),
      () => ((spec.kubeadm = { ...obj(spec.kubeadm ?? {}), verbosity: pick(g, [11, -1, '5', 2.5]) }), 'spec.kubeadm.verbosity'),
      () => ((spec.output = { format: pick(g, ['ignition-json', 'yaml', 3]) }), 'spec.output.format'),
      () => ((spec.output = { ignitionVersion: pick(g, ['3.4', 'latest', 3.4]) }), 'spec.output.ignitionVersion'),
      () => ((obj(v.metadata).labels = ['a']), 'metadata.labels'),
      () => {
        const i = someFile(g, v);
        const [field, value] = pick<[string, unknown]>(g, [
          ['content', 42],
          ['content', { text: 'x' }],
          ['content', ['a']],
          ['permissions', 420],
          ['append', 'yes'],
          ['encoding', pick(g, ['hex', 'gz', 'base-64', 'GZIP'])],
          ['owner', pick(g, ['0:0', 'root:root:root', 'ro ot', ':root'])],
          ['path', 17],
        ]);
        filesOf(v)[i]![field] = value;
        return `spec.provisioning.files[${i}].${field}`;
      },
      () => {
        const prov = obj((spec.provisioning ??= {}));
        const phase = pick(g, ['bootCommands', 'preKubeadmCommands', 'postKubeadmCommands']);
        const cmds = [...list(prov[phase])];
        const i = g(fc.integer, { min: 0, max: cmds.length });
        cmds.splice(i, 0, pick(g, [{ echo: 'done: now' }, 42, null, ['ls']]));
        prov[phase] = cmds;
        return `spec.provisioning.${phase}[${i}]`;
      },
      () => {
        const prov = obj((spec.provisioning ??= {}));
        prov.ntp = pick(g, [{ enabled: 'yes' }, { servers: 'pool.ntp.org' }, { servers: [''] }]);
        return 'spec.provisioning.ntp';
      },
      () => {
        const prov = obj((spec.provisioning ??= {}));
        const users = [...list(prov.users)] as Obj[];
        const user: Obj = { name: 'ops' };
        const [field, value] = pick<[string, unknown]>(g, [
          ['name', pick(g, ['Ops', 'o ps', '1ops', 'a'.repeat(33), ''])],
          ['sshAuthorizedKeys', 'ssh-ed25519 AAAA'],
          ['lockPassword', 'true'],
          ['groups', ['wheel']],
          ['homeDir', 'home/ops'],
          ['shell', '/bin/../bin/sh'],
          ['passwd', ''],
        ]);
        user[field] = value;
        users.push(user);
        prov.users = users;
        return `spec.provisioning.users[${users.length - 1}].${field}`;
      },
    ];
    return { path: pick(g, options)() };
  },
  'bad secret or hash format': (g, v) => {
    const cluster = obj(obj(v.spec).cluster);
    const field = pick(g, ['bootstrapToken', 'caCertHashes', 'certificateKey']);
    const base = g(() => token);
    if (field === 'bootstrapToken') {
      cluster.bootstrapToken = pick(g, [base.toUpperCase(), base.replace('.', ''), `${base}x`, base.replace('.', ':'), `${base.slice(0, 6)}.${base.slice(7, 22)}`, ` ${base}`]);
      return { path: 'spec.cluster.bootstrapToken' };
    }
    const key = g(() => hex64);
    if (field === 'certificateKey') {
      cluster.certificateKey = pick(g, [key.slice(1), `${key}0`, `${key.slice(1)}g`, `0x${key.slice(2)}`, key.replace(/^./, ' ')]);
      return { path: 'spec.cluster.certificateKey' };
    }
    const hashes = [...list(cluster.caCertHashes)];
    const i = g(fc.integer, { min: 0, max: hashes.length });
    hashes.splice(i, 0, pick(g, [key, `sha1:${key.slice(0, 40)}`, `sha256:${key.slice(1)}`, `SHA256:${key}`, `sha256:${key.slice(1)}z`]));
    cluster.caCertHashes = hashes;
    return { path: `spec.cluster.caCertHashes[${i}]` };
  },
  'relative path': (g, v) => {
    const i = someFile(g, v);
    const f = filesOf(v)[i]!;
    f.path = pick(g, [(f.path as string).slice(1), 'motd', './etc/motd', '~/x', '']);
    return { path: `spec.provisioning.files[${i}].path` };
  },
  'path with ..': (g, v) => {
    const i = someFile(g, v);
    const f = filesOf(v)[i]!;
    const p = f.path as string;
    f.path = pick(g, [`/etc/../${p.slice(1)}`, `${p}/..`, `${p}/../x`, `/..${p}`]);
    return { path: `spec.provisioning.files[${i}].path` };
  },
  'unnormalised path': (g, v) => {
    const i = someFile(g, v);
    const f = filesOf(v)[i]!;
    const p = f.path as string;
    f.path = pick(g, [`/${p}`, `${p}/`, p.replace('/', '/./'), `${p}\0`]);
    return { path: `spec.provisioning.files[${i}].path` };
  },
  'duplicate file path': (g, v) => {
    const files = filesOf(v);
    const i = someFile(g, v);
    files.push({ path: files[i]!.path, content: g(() => text), ...(chance(g, 30) ? { append: true } : {}) });
    return { path: `spec.provisioning.files[${files.length - 1}].path` };
  },
  'generated path': (g, v) => {
    const i = someFile(g, v);
    filesOf(v)[i]!.path = pick(g, ['/etc/kubeadm/bootstrap.sh', '/etc/kubernetes/pki/ca.key', '/run/kubeadm/kubeadm.yaml', '/run/cluster-api/bootstrap-success.complete']);
    return { path: `spec.provisioning.files[${i}].path` };
  },
  'bad permissions': (g, v) => {
    const i = someFile(g, v);
    filesOf(v)[i]!.permissions = pick(g, ['0999', '888', '12345', '0o644', 'rw-r--r--', '', '644 ', '-0644', '0x1ff', '77', '0+644', '017777']);
    return { path: `spec.provisioning.files[${i}].permissions` };
  },
  'missing required field': (g, v, c) => {
    const spec = obj(v.spec);
    const cluster = obj(spec.cluster);
    const options: [string, () => void][] = [
      ['apiVersion', () => delete v.apiVersion],
      ['kind', () => delete v.kind],
      ['metadata', () => delete v.metadata],
      ['metadata.name', () => delete obj(v.metadata).name],
      ['spec', () => delete v.spec],
      ['spec.role', () => delete spec.role],
      ['spec.kubernetesVersion', () => delete spec.kubernetesVersion],
      ['spec.cluster', () => delete spec.cluster],
      ['spec.cluster.name', () => delete cluster.name],
    ];
    if (c.role !== 'init') {
      for (const f of ['controlPlaneEndpoint', 'bootstrapToken', 'caCertHashes']) options.push([`spec.cluster.${f}`, () => Reflect.deleteProperty(cluster, f)]);
    } else {
      // the same request as a worker: a join needs what an init does not
      for (const f of ['controlPlaneEndpoint', 'bootstrapToken', 'caCertHashes']) {
        if (cluster[f] === undefined) options.push([`spec.cluster.${f}`, () => (spec.role = pick(g, ['worker', 'control-plane']))]);
      }
    }
    if (c.role === 'control-plane') options.push(['spec.cluster.certificateKey', () => delete cluster.certificateKey]);
    if (c.role === 'worker' && cluster.certificateKey === undefined) options.push(['spec.cluster.certificateKey', () => (spec.role = 'control-plane')]);
    const files = isObj(spec.provisioning) ? list(spec.provisioning.files) : [];
    files.forEach((f, i) => options.push([`spec.provisioning.files[${i}].path`, () => delete obj(f).path]));
    usersOf(v).forEach((u, i) => options.push([`spec.provisioning.users[${i}].name`, () => delete u.name]));
    const [path, apply] = pick(g, options);
    apply();
    return { path };
  },
  'bad kubernetesVersion': (g, v) => {
    const spec = obj(v.spec);
    const kind = pick(g, ['format', 'too old', 'pin']);
    if (kind === 'pin') {
      const [version, pin] = pick(g, [
        ['v1.30.4', 'kubeadm.k8s.io/v1beta4'],
        ['v1.22.0', 'kubeadm.k8s.io/v1beta4'],
        ['v1.36.0', 'kubeadm.k8s.io/v1beta3'],
        ['1.37.1', 'kubeadm.k8s.io/v1beta3'],
      ]);
      spec.kubernetesVersion = version;
      spec.kubeadm = { ...obj(spec.kubeadm ?? {}), apiVersion: pin };
      return { path: 'spec.kubeadm.apiVersion' };
    }
    spec.kubernetesVersion =
      kind === 'format'
        ? pick(g, ['1.33', 'latest', 'v1.33.2.1', '', ' v1.33.2', 'V1.33.2', 'v1.33.x', 'v1..2', 'stable-1.33'])
        : pick(g, ['v1.21.14', 'v1.9.0', 'v0.33.0', 'v2.0.0', '1.21.0-rc.1', 'v1.0.0']);
    return { path: 'spec.kubernetesVersion' };
  },
};

/** Serialise a (mutated) request value as request text, or pass the value itself. */
function transport(g: Draw, value: unknown): InvalidCase['input'] {
  const how = pick(g, ['value', 'json', 'yaml']);
  if (how === 'json') return { text: JSON.stringify(value, null, pick(g, [0, 2])), syntax: 'json' };
  if (how === 'yaml') return { text: dumpYaml(value), syntax: 'yaml' };
  return { value };
}

/** Text mutations: duplicate keys, malformed JSON and YAML, bodies that are no object. */
function textMutation(g: Draw, v: Obj): Omit<InvalidCase, 'secrets'> {
  const kind = pick(g, ['non-object body', 'YAML duplicate key', 'JSON duplicate key', 'malformed JSON', 'malformed YAML']);
  if (kind === 'non-object body') {
    const body = pick<unknown>(g, [null, 42, 'NodeBootstrap', [], [v], true, 0, undefined]);
    const how = pick(g, ['value', 'json', 'yaml']);
    if (body === undefined || how === 'value') return { mutation: kind, input: { value: body }, expect: { root: true } };
    return { mutation: kind, input: how === 'json' ? { text: JSON.stringify(body), syntax: 'json' } : { text: dumpYaml(body), syntax: 'yaml' }, expect: { root: true } };
  }
  if (kind === 'YAML duplicate key') {
    const yamlLines = dumpYaml(v).split('\n');
    // keys at indentation 0 and 2 are structure (block scalars are indented deeper)
    const candidates = yamlLines.flatMap((l, i) => (/^(apiVersion|kind| {2}name| {2}role| {2}kubernetesVersion): \S/.test(l) ? [i] : []));
    const i = pick(g, candidates);
    const dup = yamlLines[i]!;
    const at = i + 1; // right below the original, in the same mapping
    yamlLines.splice(at, 0, dup);
    return { mutation: kind, input: { text: yamlLines.join('\n'), syntax: 'yaml' }, expect: { malformed: 'YAML', line: at + 1 } };
  }
  if (kind === 'JSON duplicate key') {
    const json = JSON.stringify(v);
    const text = pick(g, [`{"kind":"NodeBootstrap",${json.slice(1)}`, `${json.slice(0, -1)},"apiVersion":"bootwright.dev/v1alpha1"}`]);
    return { mutation: kind, input: { text, syntax: 'json' }, expect: { malformed: 'JSON' } };
  }
  if (kind === 'malformed JSON') {
    const json = JSON.stringify(v, null, pick(g, [0, 2]));
    const how = pick(g, ['truncate', 'truncate after a colon', 'trailing comma', 'single quotes', 'unquoted key', 'unquoted value', 'comment']);
    let text: string;
    if (how === 'truncate') text = json.slice(0, g(fc.integer, { min: 1, max: json.length - 1 }));
    else if (how === 'truncate after a colon') text = json.slice(0, json.indexOf(':', g(fc.integer, { min: 0, max: json.lastIndexOf(':') })) + 1);
    else if (how === 'unquoted value') text = json.replace(/"kind": ?"NodeBootstrap"/, '"kind":NodeBootstrap');
    else if (how === 'trailing comma') text = `${json.slice(0, -1)},}`;
    else if (how === 'single quotes') text = json.replace('"kind"', "'kind'");
    else if (how === 'unquoted key') text = json.replace('"kind"', 'kind');
    else text = `{/* request */${json.slice(1)}`;
    return { mutation: `${kind} (${how})`, input: { text, syntax: 'json' }, expect: { malformed: 'JSON' } };
  }
  const yaml = dumpYaml(v);
  const how = pick(g, ['unclosed flow', 'bad indentation', 'unterminated quote', 'tab indentation', 'unknown alias']);
  let text: string;
  if (how === 'unclosed flow') text = `${yaml}extra: [1, 2\n`;
  else if (how === 'bad indentation') text = yaml.replace(/^kind: NodeBootstrap\n/m, 'kind: NodeBootstrap\n bad: indentation\n');
  else if (how === 'unterminated quote') text = yaml.replace(/^apiVersion: .*$/m, 'apiVersion: "bootwright.dev/v1alpha1');
  else if (how === 'tab indentation') text = yaml.replace(/^ {2}role: /m, '\trole: ');
  else text = `${yaml}extra: *nowhere\n`;
  return { mutation: `${kind} (${how})`, input: { text, syntax: 'yaml' }, expect: { malformed: 'YAML' } };
}

function invalidCase(): fc.Arbitrary<InvalidCase> {
  const names = Object.keys(MUTATIONS);
  const kinds = fc.constantFrom(...names, ...names.slice(0, 2), 'text', 'text');
  return fc.tuple(validCase({ binary: false, refusable: false }), kinds, fc.noShrink(fc.integer())).map(([c, which, seed]): InvalidCase => {
    const g = seededDraw(seed);
    const v = structuredClone(c.value);
    const original = secretsIn(c.value);
    if (which === 'text') {
      const m = textMutation(g, v);
      return { ...m, secrets: original };
    }
    const expect = MUTATIONS[which]!(g, v, c);
    return { mutation: which, input: transport(g, v), expect, secrets: [...new Set([...original, ...secretsIn(v)])] };
  });
}

/** Run the pipeline (read or validate, then render cloud-config) and return the RequestError it must throw. */
function refusal(c: InvalidCase): { error: RequestError; stage: string } {
  let stage = 'read';
  try {
    const req = 'value' in c.input ? validateNodeBootstrap(c.input.value) : parseNodeBootstrap(c.input.text, c.input.syntax);
    stage = 'render';
    renderNodeBootstrap(req, { format: 'cloud-config' });
    renderNodeBootstrap(req, { format: 'ignition' });
  } catch (e) {
    assert.ok(e instanceof RequestError, `expected a RequestError, got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    return { error: e, stage };
  }
  assert.fail(`${c.mutation}: the request was accepted`);
}

const names = (path: string, expected: string) => path === expected || path.startsWith(`${expected}.`) || path.startsWith(`${expected}[`);

const count = (stats: Map<string, number>, key: string) => stats.set(key, (stats.get(key) ?? 0) + 1);

function checkInvalid(c: InvalidCase, stats: Map<string, number>): void {
  const { error, stage } = refusal(c);
  count(stats, `${c.mutation.replace(/ \(.*/, '')} @${stage}`);
  const shown = error.problems.map((p) => `${p.path || '(root)'}: ${p.message}`).join('\n');
  assert.ok(error.problems.length > 0, 'no problems listed');
  for (const p of error.problems) assert.ok(p.message.length > 0, 'empty problem message');
  for (const secret of c.secrets) {
    assert.ok(!error.message.includes(secret), `a secret value is echoed in: ${error.message}`);
    for (const p of error.problems) assert.ok(!p.message.includes(secret) && !p.path.includes(secret), `a secret value is echoed in: ${p.path}: ${p.message}`);
  }
  const { expect } = c;
  if ('path' in expect) {
    assert.equal(error.status, 422, shown);
    assert.ok(
      error.problems.some((p) => p.path !== '' && names(p.path, expect.path)),
      `${c.mutation}: no problem names ${expect.path}:\n${shown}`,
    );
  } else if ('root' in expect) {
    assert.equal(error.status, 422, shown);
    assert.ok(error.problems.some((p) => p.path === ''), `${c.mutation}: no problem at the root:\n${shown}`);
  } else {
    assert.equal(error.status, 400, shown);
    const message = error.problems[0]!.message;
    const m = new RegExp(`^malformed ${expect.malformed} at line (\\d+) column (\\d+)`).exec(message);
    assert.ok(m, `${c.mutation}: expected "malformed ${expect.malformed} at line L column C", got ${JSON.stringify(message)}`);
    if (expect.line !== undefined) assert.equal(Number(m[1]), expect.line, `${c.mutation}: line of the duplicate key`);
  }
}

// ---------------------------------------------------------------------------------

/**
 * The Python that runs cloud-init (the `cloud-init` script's `#!` line), or undefined
 * when cloud-init is not installed.
 */
function cloudInitPython(): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/bin']) {
    const file = `${dir}/cloud-init`;
    if (!existsSync(file)) continue;
    return /^#!\s*(\S+)/.exec(readFileSync(file, 'utf8').slice(0, 200))?.[1];
  }
  return undefined;
}

/**
 * What cloud-init itself makes of each document: its YAML loader (`util.load_yaml`), its
 * `write_files` decoding (`cc_write_files.extract_contents`) and the scripts `runcmd` and
 * `bootcmd` write (`util.shellify`), as base64 bytes. One Python process for all.
 */
const CLOUD_INIT_READER = `
import base64, json, sys
from cloudinit import util
from cloudinit.config.cc_write_files import canonicalize_extraction, extract_contents
b64 = lambda b: base64.b64encode(util.encode_text(b)).decode()
out = []
for text in json.load(sys.stdin):
    d = util.load_yaml(text)
    files = {f["path"]: b64(extract_contents(f.get("content", ""), canonicalize_extraction(f.get("encoding")))) for f in d.get("write_files", [])}
    out.append({"files": files, "runcmd": b64(util.shellify(d["runcmd"])), "bootcmd": b64(util.shellify(d["bootcmd"])) if "bootcmd" in d else None})
json.dump(out, sys.stdout)
`;

interface CloudInitRead {
  files: Record<string, string>;
  runcmd: string;
  bootcmd: string | null;
}

describe('property: valid requests render in both formats', () => {
  it(`passes every validator and keeps files and commands exactly (${NUM_RUNS} runs)`, async () => {
    await fc.assert(fc.asyncProperty(validCase(), checkValid), { numRuns: NUM_RUNS, plugins: [fc.interruptAfterTimeLimit(120_000, { failOnInterrupt: true })] });
  });

  it('passes the real cloud-init schema on a fixed sample', async () => {
    const sample = fc.sample(validCase(), { numRuns: 5, seed: 20240601 });
    const results = await Promise.all(sample.map((c) => cloudInitSchema(renderNodeBootstrap(validateNodeBootstrap(c.value), { format: 'cloud-config' }).body)));
    results.forEach((problems, i) => assert.deepEqual(problems, [], `sample ${i}: ${JSON.stringify(sample[i]!.value)}`));
  });

  const python = cloudInitPython();
  it('reads back through cloud-init itself: files, runcmd and bootcmd scripts byte for byte (fixed sample)', { skip: python ? false : 'cloud-init not installed' }, () => {
    const sample = fc.sample(validCase(), { numRuns: NUM_RUNS, seed: 7 });
    const bodies = sample.map((c) => renderNodeBootstrap(validateNodeBootstrap(c.value), { format: 'cloud-config' }).body);
    const out = execFileSync(python!, ['-c', CLOUD_INIT_READER], { input: JSON.stringify(bodies), maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' });
    const read = JSON.parse(out) as CloudInitRead[];
    sample.forEach((c, i) => {
      const r = read[i]!;
      const where = `sample ${i}: ${JSON.stringify(c.value).slice(0, 2000)}`;
      for (const f of c.files) {
        assert.ok(r.files[f.path] !== undefined, `${where}: ${f.path} missing`);
        assert.ok(Buffer.from(r.files[f.path]!, 'base64').equals(f.bytes), `${where}: ${f.path} differs`);
      }
      const runcmd = Buffer.from(r.runcmd, 'base64');
      const generated = (load(bodies[i]!, { schema: YAML11_SCHEMA }) as { runcmd: string[] }).runcmd;
      const head = Buffer.concat([utf8('#!/bin/sh\n'), lines([...generated.slice(0, generatedChowns(generated)), ...c.pre])]);
      const tail = lines(c.post);
      assert.ok(runcmd.subarray(0, head.length).equals(head) && runcmd.subarray(runcmd.length - tail.length).equals(tail), `${where}: runcmd script`);
      assert.match(runcmd.subarray(head.length, runcmd.length - tail.length).toString('utf8'), /^kubeadm (init|join) --config \/run\/kubeadm\/\S+ .*&& echo success > \/run\/cluster-api\/bootstrap-success\.complete\n$/);
      const bootcmd = r.bootcmd === null ? undefined : Buffer.from(r.bootcmd, 'base64');
      if (c.boot.length) assert.ok(bootcmd?.equals(Buffer.concat([utf8('#!/bin/sh\n'), lines(c.boot)])), `${where}: bootcmd script`);
      else assert.equal(bootcmd, undefined, where);
    });
  });
});

describe('property: invalid requests are refused', () => {
  it(`throws a RequestError naming the mutated field, never echoing a secret (${NUM_RUNS * 3} runs)`, (t) => {
    const stats = new Map<string, number>();
    fc.assert(
      fc.property(invalidCase(), (c) => checkInvalid(c, stats)),
      { numRuns: NUM_RUNS * 3, plugins: [fc.interruptAfterTimeLimit(60_000, { failOnInterrupt: true })] },
    );
    t.diagnostic([...stats].sort().map(([k, n]) => `${k}: ${n}`).join(', '));
  });
});

/** Minimal counterexamples of the bugs the properties found, kept as regressions. */
describe('regressions found by the properties', () => {
  const worker = (provisioning: Obj): Obj => ({
    apiVersion: 'bootwright.dev/v1alpha1',
    kind: 'NodeBootstrap',
    metadata: { name: 'w' },
    spec: {
      role: 'worker',
      kubernetesVersion: 'v1.33.0',
      cluster: { name: 'c', controlPlaneEndpoint: 'cp:6443', bootstrapToken: 'abcdef.0123456789abcdef', caCertHashes: [`sha256:${'a'.repeat(64)}`] },
      provisioning,
    },
  });

  it('malformed JSON names line and column for every syntax error', () => {
    // V8: `Unexpected token 'x', "{"a":x}" is not valid JSON` and `Unexpected end of JSON input` carry no "position N".
    for (const text of ['{"a":x}', '{"a":', '{"a":tru', '']) {
      assert.throws(() => parseNodeBootstrap(text, 'json'), (e: unknown) => {
        assert.ok(e instanceof RequestError);
        assert.match(e.problems[0]!.message, /^malformed JSON at line \d+ column \d+/, JSON.stringify(text));
        return true;
      });
    }
  });

  it('a filesystem on partition "1" renders a cloud-config that cloud-init accepts', async () => {
    const req = validateNodeBootstrap(worker({ diskSetup: { filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', partition: '1' }] } }));
    const body = renderNodeBootstrap(req, { format: 'cloud-config' }).body;
    // cloud-init 22.4's schema lists only auto/any/none under `oneOf`, so neither "1" nor 1 passes;
    // `device: /dev/sdb.1` (cc_disk_setup expands `<device>.<partition>`) would.
    assert.deepEqual(validateCloudConfigSchema(body), []);
    assert.deepEqual(await cloudInitSchema(body), []);
  });

  it('users a$ and a_ with sudo rules render for Ignition', () => {
    const sudo = 'ALL=(ALL) NOPASSWD:ALL';
    const req = validateNodeBootstrap(worker({ users: [{ name: 'a$', sudo }, { name: 'a_', sudo }] }));
    const ign = renderNodeBootstrap(req, { format: 'ignition' });
    assert.deepEqual(checkIgnitionRules(JSON.parse(ign.body) as Obj), []);
  });

  it('a request file cannot sit where bootwright writes a directory', () => {
    // The node needs /etc/kubeadm (or /run/kubeadm, /run/cluster-api) to be the directory
    // of bootstrap.sh / kubeadm.yaml / the sentinel, so it cannot be the request's file.
    for (const path of ['/etc/kubeadm', '/run/kubeadm', '/run/cluster-api', '/etc/kubernetes/pki']) {
      for (const format of ['cloud-config', 'ignition'] as const) assert.throws(() => renderNodeBootstrap(validateNodeBootstrap(worker({ files: [{ path, content: 'x' }] })), { format }), RequestError, path);
    }
  });

  it('Ignition refuses a request file where it writes a directory', () => {
    // storage.files would hold both /etc/sudoers.d and /etc/sudoers.d/ops.
    const req = validateNodeBootstrap(worker({ files: [{ path: '/etc/sudoers.d', content: 'x' }], users: [{ name: 'ops', sudo: 'ALL=(ALL) ALL' }] }));
    assert.throws(() => renderNodeBootstrap(req, { format: 'ignition' }), RequestError);
  });
});
