/**
 * The real kubeadm reads every kubeadm configuration bootwright writes (issue 28): the
 * pinned kubeadm of each minor (tools/reference, `npm run tools`; test/support/tools.ts
 * picks the one whose skew policy covers a version) runs `kubeadm config validate` on
 * every configuration the suite's requests produce (test/support/suite-requests.ts), at
 * kubeadm.k8s.io/v1beta3 and v1beta4 wherever bootwright writes both, and
 * `kubeadm config migrate` says our v1beta3 and our v1beta4 of one request are the same
 * configuration. The Cluster API corpus's boot-time configurations are validated in
 * test/capi/corpus.test.ts.
 *
 * Then bootwright's own checks (the strict types of src/bootstrap/kubeadm/types.ts and
 * the values of src/bootstrap/kubeadm/values.ts) are held against kubeadm's on mutations
 * of real configurations (kubeadm's own `config print` defaults and the suite's outputs):
 * an unknown field at every object, a wrong type or a bad value at every leaf. They
 * must agree, except where listed below, with the reason.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { dump } from 'js-yaml';
import { buildKubeadm, type KubeadmBootstrap } from '../../../src/bootstrap/kubeadm/build.js';
import { ARG_PATHS, readArgs } from '../../../src/bootstrap/kubeadm/args.js';
import { type KubeadmKind, kubeadmSchema } from '../../../src/bootstrap/kubeadm/types.js';
import type { KubeadmApiVersion } from '../../../src/bootstrap/kubeadm/version.js';
import { kubeadmValueProblems } from '../../../src/bootstrap/kubeadm/values.js';
import { type FieldProblem, RequestError } from '../../../src/errors.js';
import type { NodeBootstrap } from '../../../src/request/schema.js';
import { kubeadmDocuments } from '../../support/corpus.js';
import { inCI } from '../../support/missing.js';
import { suiteRequests } from '../../support/suite-requests.js';
import { kubeadmFor, kubeadmTools, referenceToolMissing } from '../../support/tools.js';
import { kubeadmMigrate, kubeadmValidate } from '../../support/validators.js';

const skip = referenceToolMissing('kubeadm', 'kubeadm configurations are NOT read by the real kubeadm');

type Doc = Record<string, unknown>;
const API = ['kubeadm.k8s.io/v1beta3', 'kubeadm.k8s.io/v1beta4'] as const;

/** The request with its kubeadm API version pinned. */
function pinned(req: NodeBootstrap, apiVersion: (typeof API)[number]): NodeBootstrap {
  const copy = structuredClone(req);
  copy.spec.kubeadm = { ...copy.spec.kubeadm, apiVersion };
  return copy;
}

/** The kubeadm configuration of a request, or undefined when bootwright refuses it (a 422 is not a configuration). */
function build(req: NodeBootstrap): KubeadmBootstrap | undefined {
  try {
    return buildKubeadm(req);
  } catch (e) {
    if (e instanceof RequestError) return undefined;
    throw e;
  }
}

/** kubeadm's deprecation of v1beta3, which kubeadm 1.31 to 1.36 print for it and which is expected there. */
const V1BETA3_DEPRECATED = 'your configuration file uses a deprecated API spec: "kubeadm.k8s.io/v1beta3"';

/** The configurations of the suite's native requests (a Cluster API template's carry values filled in on the node), each as written and at each pin bootwright takes. */
function suiteConfigurations(): { name: string; version: string; kubeadm: KubeadmBootstrap }[] {
  const out: { name: string; version: string; kubeadm: KubeadmBootstrap }[] = [];
  for (const { name, req, format } of suiteRequests()) {
    if (format !== undefined) continue;
    const seen = new Set<string>();
    for (const [label, r] of [['', req], ...API.map((a) => [` pinned to ${a}`, pinned(req, a)] as const)] as const) {
      const kubeadm = build(r);
      if (kubeadm === undefined || seen.has(kubeadm.yaml)) continue;
      seen.add(kubeadm.yaml);
      out.push({ name: `${name}${label}`, version: req.spec.kubernetesVersion, kubeadm });
    }
  }
  return out;
}

describe('the real kubeadm reads what bootwright writes', { skip }, () => {
  it('kubeadm config validate accepts every configuration the suite renders, at v1beta3 and v1beta4', async (t) => {
    const configs = suiteConfigurations();
    const failures: string[] = [];
    const uncovered = new Set<string>();
    const byApi = new Map<string, number>();
    await Promise.all(
      configs.map(async ({ name, version, kubeadm }) => {
        const verdict = await kubeadmValidate(kubeadm.yaml, version);
        if (verdict === undefined) {
          uncovered.add(version);
          return;
        }
        byApi.set(kubeadm.apiVersion, (byApi.get(kubeadm.apiVersion) ?? 0) + 1);
        const warnings = verdict.warnings.filter((w) => !w.startsWith(V1BETA3_DEPRECATED));
        if (verdict.problems.length > 0 || warnings.length > 0) failures.push(`${name} (${verdict.kubeadm}, ${kubeadm.apiVersion}): ${[...verdict.problems, ...warnings].join('; ')}`);
      }),
    );
    t.diagnostic(`read by kubeadm: ${JSON.stringify(Object.fromEntries(byApi))}; no kubeadm built for: ${[...uncovered].join(', ') || 'none'}`);
    if (inCI) assert.deepEqual([...uncovered], [], `no pinned kubeadm covers these versions (minors built: ${[...kubeadmTools().keys()].join(', ')})`);
    assert.deepEqual(failures, []);
    assert.ok((byApi.get('kubeadm.k8s.io/v1beta3') ?? 0) >= 10 && (byApi.get('kubeadm.k8s.io/v1beta4') ?? 0) >= 20, `read by kubeadm: ${JSON.stringify(Object.fromEntries(byApi))}`);
  });

  it('kubeadm config migrate makes one configuration of our v1beta3 and our v1beta4 of a request', async () => {
    const failures: string[] = [];
    let compared = 0;
    await Promise.all(
      suiteRequests()
        .filter(({ format }) => format === undefined)
        .map(async ({ name, req }) => {
          const [v3, v4] = API.map((a) => build(pinned(req, a)));
          if (v3 === undefined || v4 === undefined) return; // one of them is not written at this version
          const version = req.spec.kubernetesVersion;
          if (kubeadmFor(version) === undefined) return;
          const [m3, m4] = await Promise.all([kubeadmMigrate(v3.yaml, version), kubeadmMigrate(v4.yaml, version)]);
          if (m3!.problems.length > 0 || m4!.problems.length > 0) {
            failures.push(`${name}: ${[...m3!.problems, ...m4!.problems].join('; ')}`);
            return;
          }
          compared++;
          const docs = (text: string) => withoutGenerated(kubeadmDocuments(text), v4.documents).sort((a, b) => String(a.kind).localeCompare(String(b.kind)));
          try {
            assert.deepEqual(docs(m3!.migrated), docs(m4!.migrated));
          } catch {
            failures.push(`${name}: migrated v1beta3 and v1beta4 differ:\n${dump(docs(m3!.migrated))}\n---- against ----\n${dump(docs(m4!.migrated))}`);
          }
        }),
    );
    assert.deepEqual(failures, []);
    assert.ok(compared >= 10, `only ${compared} requests compared`);
  });
});

/**
 * Migrated documents without what kubeadm makes up when a configuration leaves it out, new
 * on every run: an InitConfiguration's bootstrap token and certificate key (random) and
 * this host's address as its advertise address. And one field kubeadm's migration gets
 * wrong: its mutator for v1beta3 input (cmd/kubeadm/app/util/config/common.go,
 * defaultMigrateMutators, v1.32 to v1.36) runs on v1beta4 input too and copies the
 * internal ClusterConfiguration's empty timeoutForControlPlane over
 * timeouts.controlPlaneComponentHealthCheck, which comes out `0s` from any v1beta4
 * InitConfiguration that sets no timeouts (seen on a two-line one), while `kubeadm init`
 * defaults it to 4m0s (v1beta4 SetDefaults_Timeouts): left out when ours sets none.
 */
function withoutGenerated(migrated: Doc[], ours: Doc[]): Doc[] {
  const init = ours.find((d) => d.kind === 'InitConfiguration');
  return migrated.map((d) => {
    if (d.kind !== 'InitConfiguration' || init === undefined) return d;
    const out = { ...d };
    if (init.certificateKey === undefined) delete out.certificateKey;
    if (init.bootstrapTokens === undefined) delete out.bootstrapTokens;
    if ((init.localAPIEndpoint as Doc | undefined)?.advertiseAddress === undefined) out.localAPIEndpoint = { ...(out.localAPIEndpoint as Doc), advertiseAddress: '(this host)' };
    if ((init.timeouts as Doc | undefined)?.controlPlaneComponentHealthCheck === undefined) {
      const { controlPlaneComponentHealthCheck: _left, ...timeouts } = out.timeouts as Doc;
      out.timeouts = timeouts;
    }
    return out;
  });
}

/** One change to a configuration: where, what, and the changed document. */
interface Mutation {
  path: string;
  how: string;
  apply: (doc: Doc) => Doc;
}

function setAt(root: Doc, path: string[], value: unknown): Doc {
  const copy = structuredClone(root);
  let cur = copy as Record<string, unknown>;
  for (const k of path.slice(0, -1)) cur = cur[k] as Record<string, unknown>;
  cur[path.at(-1)!] = value;
  return copy;
}

/** An unknown field at every object; a number, an object and a bad value for every string; a string for every boolean and number. */
function* mutations(value: unknown, path: string[] = []): Generator<Mutation> {
  const at = path.join('.');
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* mutations(item, [...path, String(i)]);
  } else if (typeof value === 'object' && value !== null) {
    yield { path: at, how: 'an unknown field', apply: (d) => setAt(d, [...path, 'bootwrightProbe'], 'x') };
    for (const [k, v] of Object.entries(value)) if (!(path.length === 0 && (k === 'apiVersion' || k === 'kind'))) yield* mutations(v, [...path, k]);
  } else if (typeof value === 'string') {
    yield { path: at, how: 'a number', apply: (d) => setAt(d, path, 7) };
    yield { path: at, how: 'an object', apply: (d) => setAt(d, path, { a: 1 }) };
    yield { path: at, how: 'a bad value', apply: (d) => setAt(d, path, 'Probe Value!') };
  } else if (typeof value === 'boolean' || typeof value === 'number') {
    yield { path: at, how: 'a string', apply: (d) => setAt(d, path, 'probe') };
  }
}

/**
 * bootwright's verdict on a configuration given as a request's kubeadm override, as
 * src/bootstrap/kubeadm/build.ts reads one: its arguments in either shape (readArgs),
 * then the strict types of its version, then kubeadm's values as bootwright checks them.
 */
function bootwrightRefuses(docs: Doc[]): boolean {
  return docs.some(({ apiVersion, kind, ...rest }) => {
    const problems: FieldProblem[] = [];
    const doc = structuredClone(rest);
    for (const path of ARG_PATHS[kind as string]!) {
      let parent: unknown = doc;
      for (const key of path.slice(0, -1)) parent = (parent as Doc | undefined)?.[key];
      const given = (parent as Doc | undefined)?.[path.at(-1)!];
      if (given === undefined || given === null) continue;
      const list = readArgs(given, path.join('.'), problems);
      if (list) (parent as Doc)[path.at(-1)!] = list;
    }
    if (problems.length > 0) return true;
    if (!kubeadmSchema(apiVersion as KubeadmApiVersion, kind as KubeadmKind).safeParse(doc).success) return true;
    // buildKubeadm's own check, which every release made (it places the PKI there).
    if (typeof doc.certificatesDir === 'string' && (!doc.certificatesDir.startsWith('/') || doc.certificatesDir.split('/').includes('..'))) return true;
    return kubeadmValueProblems(kind as KubeadmKind, rest, 'doc').length > 0;
  });
}

/**
 * Where bootwright refuses what kubeadm accepts: kubeadm leaves these to what runs after
 * it, so the node would fail later, not in kubeadm. `<kind> <path>: <how>`, `N` for a
 * list index.
 */
const BOOTWRIGHT_ONLY: Record<string, string> = {
  'JoinConfiguration discovery.bootstrapToken.caCertHashes.N: a bad value': 'kubeadm checks a pin only when discovery compares it with the CA ("invalid hash"): the join fails',
  'JoinConfiguration nodeRegistration.taints.N.effect: a bad value': 'kubeadm does not validate taints ("TODO: Maybe validate .Taints"); the API server refuses the Node it registers',
};

/**
 * Where kubeadm refuses what bootwright accepts: a flag's value given as a YAML number
 * (`max-pods: 110`) is read as its text and written as a string, which is what the user
 * meant; kubeadm's decoder, typed `string`, refuses the number.
 */
const LENIENT = 'bootwright reads a number as its text and writes it as a string';
const KUBEADM_ONLY: Record<string, string> = {
  'ClusterConfiguration controllerManager.extraArgs.N.value: a number': LENIENT,
  'ClusterConfiguration controllerManager.extraArgs.<flag>: a number': LENIENT,
  'InitConfiguration nodeRegistration.kubeletExtraArgs.N.value: a number': LENIENT,
  'InitConfiguration nodeRegistration.kubeletExtraArgs.<flag>: a number': LENIENT,
  'JoinConfiguration nodeRegistration.kubeletExtraArgs.N.value: a number': LENIENT,
  'JoinConfiguration nodeRegistration.kubeletExtraArgs.<flag>: a number': LENIENT,
};

describe('bootwright refuses what kubeadm refuses', { skip }, () => {
  it('on every mutation of real configurations, or the difference is listed', async (t) => {
    const bases: { name: string; version: string; docs: Doc[] }[] = [];
    for (const [minor, kubeadm] of kubeadmTools()) {
      for (const what of ['init-defaults', 'join-defaults']) {
        const text = execFileSync(kubeadm, ['config', 'print', what], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
        bases.push({ name: `kubeadm-1.${minor} config print ${what}`, version: `v1.${minor}.0`, docs: kubeadmDocuments(text) });
      }
    }
    const shapes = new Set<string>();
    for (const { name, version, kubeadm } of suiteConfigurations()) {
      const shape = JSON.stringify(kubeadm.documents, (_k, v: unknown) => (typeof v === 'string' ? '' : v));
      if (shapes.has(shape)) continue;
      shapes.add(shape);
      bases.push({ name, version, docs: kubeadm.documents });
    }
    const disagreements = new Map<string, string>();
    let tried = 0;
    for (const base of bases) {
      const valid = await kubeadmValidate(base.docs.map((d) => dump(d)).join('---\n'), base.version);
      if (valid === undefined) continue;
      assert.deepEqual(valid.problems, [], `${base.name} is valid to kubeadm before it is changed`);
      assert.equal(bootwrightRefuses(base.docs), false, `${base.name} is valid to bootwright before it is changed`);
      const work: Promise<void>[] = [];
      for (const [i, doc] of base.docs.entries()) {
        for (const m of mutations(doc)) {
          const docs = base.docs.map((d, j) => (j === i ? m.apply(d) : d));
          const ours = bootwrightRefuses(docs);
          tried++;
          work.push(
            kubeadmValidate(docs.map((d) => dump(d)).join('---\n'), base.version).then((verdict) => {
              const theirs = verdict!.problems.length > 0;
              if (ours === theirs) return;
              const key = `${String(doc.kind)} ${m.path.replace(/\.\d+(?=\.|$)/g, '.N').replace(/(xtraArgs)\.(?!N\b)[^.]+/, '$1.<flag>')}: ${m.how}`;
              disagreements.set(key, `${ours ? 'bootwright refuses, kubeadm accepts' : `kubeadm refuses (${verdict!.problems.join(' ')}), bootwright accepts`} (${base.name}, ${String(doc.apiVersion)})`);
            }),
          );
        }
      }
      await Promise.all(work);
    }
    t.diagnostic(`${tried} mutations of ${bases.length} configurations, ${disagreements.size} differences (listed)`);
    assert.ok(tried > 1000, `only ${tried} mutations tried`);
    const unlisted = [...disagreements].filter(([key]) => !(key in BOOTWRIGHT_ONLY) && !(key in KUBEADM_ONLY)).map(([key, what]) => `${key}: ${what}`);
    assert.deepEqual(unlisted, []);
    // A listed difference that no longer shows is a list to shorten.
    assert.deepEqual(Object.keys({ ...BOOTWRIGHT_ONLY, ...KUBEADM_ONLY }).filter((key) => !disagreements.has(key)), []);
  });
});
