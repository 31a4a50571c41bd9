/**
 * The deployment files agree with the service: deploy/kubernetes/base/*.yaml (probes hit
 * routes the service really serves, ports, selectors, security context, config keys),
 * the replicated overlay deploy/kubernetes/replicated (PostgreSQL from a Secret whose
 * key names match, a PodDisruptionBudget selecting the pods, readiness on /readyz; also
 * built with `kubectl kustomize` when kubectl is installed) and the Dockerfile (multi-stage, non-root numeric USER, healthcheck, exec-form CMD,
 * no devDependencies in the final image). Read-only: nothing is built or applied.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadAll } from 'js-yaml';
import { buildServer } from '../../src/api/server.js';
import { decodeConfiguredKey } from '../../src/boot/sign.js';
import { ConfigError, configSchema, loadConfig } from '../../src/config.js';
import { PING_TIMEOUT_MS } from '../../src/store/postgres.js';

const root = new URL('../../', import.meta.url);
const k8sTop = new URL('deploy/kubernetes/', root);
const k8sDir = new URL('base/', k8sTop);
const overlayDir = new URL('replicated/', k8sTop);
const read = (url: URL) => readFileSync(url, 'utf8');

// ---------------------------------------------------------------------------------
// Kubernetes manifests
// ---------------------------------------------------------------------------------

type Labels = Record<string, string>;
interface Metadata {
  name?: string;
  namespace?: string;
  labels?: Labels;
}
/** A Kubernetes object: only the fields the checks read, all of them checked at run time. */
interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Metadata;
}
interface Probe {
  httpGet?: { path?: string; port?: string | number };
  timeoutSeconds?: number;
}
interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { drop?: string[] };
  seccompProfile?: { type?: string };
}
interface ContainerPort {
  name?: string;
  containerPort: number;
}
interface Container {
  name: string;
  ports?: ContainerPort[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  securityContext?: SecurityContext;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface AntiAffinityTerm {
  weight: number;
  podAffinityTerm: { topologyKey: string; labelSelector?: { matchLabels?: Labels } };
}
interface PodSpec {
  containers: Container[];
  securityContext?: SecurityContext;
  volumes?: { name: string; emptyDir?: object | null; persistentVolumeClaim?: { claimName?: string } | null }[];
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  affinity?: { podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution?: AntiAffinityTerm[] } };
}
interface Deployment extends K8sObject {
  spec: {
    replicas?: number;
    selector: { matchLabels?: Labels };
    strategy?: { type?: string; rollingUpdate?: { maxUnavailable?: number | string } };
    template: { metadata?: Metadata; spec: PodSpec };
  };
}
interface Service extends K8sObject {
  spec: { type?: string; externalTrafficPolicy?: string; selector?: Labels; ports: { port: number; targetPort?: number | string; nodePort?: number }[] };
}
interface PersistentVolumeClaim extends K8sObject {
  spec: { accessModes?: string[]; resources?: { requests?: { storage?: string } } };
}
interface PodDisruptionBudget extends K8sObject {
  spec: { minAvailable?: number | string; selector: { matchLabels?: Labels } };
}
interface Kustomization extends K8sObject {
  resources?: string[];
  patches?: { path?: string }[];
}
interface ConfigMap extends K8sObject {
  data?: Record<string, unknown>;
}
interface Secret extends K8sObject {
  data?: Record<string, unknown>;
  stringData?: Record<string, unknown>;
}

const isObject = (d: unknown): d is K8sObject => d !== null && typeof d === 'object' && !Array.isArray(d);

const yamlFiles = readdirSync(k8sDir)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();
const docsByFile = new Map<string, K8sObject[]>(yamlFiles.map((f) => [f, loadAll(read(new URL(f, k8sDir))).filter(isObject)]));
const objects = [...docsByFile.entries()].filter(([f]) => f !== 'kustomization.yaml').flatMap(([, docs]) => docs);

/** The kinds the directory holds, and the shapes the checks read. */
interface Kinds {
  Namespace: K8sObject;
  ConfigMap: ConfigMap;
  Secret: Secret;
  Deployment: Deployment;
  PersistentVolumeClaim: PersistentVolumeClaim;
}
const KINDS: (keyof Kinds)[] = ['Namespace', 'ConfigMap', 'Secret', 'Deployment', 'PersistentVolumeClaim'];

/** The Services: one for operators and controllers in the cluster, one for booting machines. */
const services = objects.filter((o): o is Service => o.kind === 'Service');
const serviceNamed = (name: string): Service => {
  const found = services.find((o) => o.metadata?.name === name);
  assert.ok(found, `a Service ${name}`);
  return found;
};

/** The one object of a kind. */
function one<K extends keyof Kinds>(kind: K): Kinds[K] {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `expected exactly one ${kind}, found ${found.length}`);
  return found[0] as Kinds[K];
}

const deployment = one('Deployment');
const podSpec = deployment.spec.template.spec;
const podLabels = deployment.spec.template.metadata?.labels ?? {};
const containers = podSpec.containers;
const container = containers[0]!;
const httpPort = container.ports?.find((p) => p.name === 'http') ?? { containerPort: Number.NaN };

/** A securityContext field as it takes effect: the container's, else the pod's. */
const effective = <K extends keyof SecurityContext>(key: K): SecurityContext[K] => container.securityContext?.[key] ?? podSpec.securityContext?.[key];

/** True when every label of `selector` is on `labels`. */
const selects = (selector: Labels | undefined, labels: Labels) =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);

/** A port reference (name or number) that means the container's http port. */
const isHttpPort = (port: string | number | undefined) => port === httpPort.name || port === httpPort.containerPort;

/** BOOTWRIGHT_FOO_BAR → fooBar. */
const camel = (env: string) =>
  env
    .replace(/^BOOTWRIGHT_/, '')
    .toLowerCase()
    .replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

const probes = (['livenessProbe', 'readinessProbe', 'startupProbe'] as const).flatMap((name) => {
  const probe = container[name];
  return probe ? [[name, probe] as const] : [];
});

describe('deploy/kubernetes manifests', () => {
  it('deploy/kubernetes applies the base', () => {
    const top: Kustomization | undefined = loadAll(read(new URL('kustomization.yaml', k8sTop))).find(isObject);
    assert.equal(top?.kind, 'Kustomization');
    assert.deepEqual(top.resources, ['base']);
  });

  it('every file parses, and the kustomization lists exactly the other files', () => {
    assert.ok(yamlFiles.includes('kustomization.yaml'));
    for (const [f, docs] of docsByFile) assert.ok(docs.length > 0, `${f} holds no object`);
    const kustomization: Kustomization | undefined = docsByFile.get('kustomization.yaml')?.[0];
    assert.equal(kustomization?.kind, 'Kustomization');
    assert.deepEqual(
      [...(kustomization.resources ?? [])].sort(),
      yamlFiles.filter((f) => f !== 'kustomization.yaml'),
    );
  });

  it('holds the expected objects, all in the bootwright namespace and labelled', () => {
    for (const kind of KINDS) one(kind);
    for (const o of objects) assert.ok(KINDS.includes(o.kind as keyof Kinds) || o.kind === 'Service', `unexpected kind ${o.kind ?? '(none)'}`);
    assert.deepEqual(services.map((o) => o.metadata?.name).sort(), ['bootwright', 'bootwright-provisioning']);
    assert.equal(objects.filter((o) => o.kind === 'PodDisruptionBudget').length, 0, 'one replica has no PDB: it would block every drain');
    assert.equal(one('Namespace').metadata?.name, 'bootwright');
    for (const o of objects) {
      const what = `${o.kind ?? '?'} ${o.metadata?.name ?? '?'}`;
      assert.equal(o.metadata?.labels?.['app.kubernetes.io/name'], 'bootwright', `${what}: label`);
      if (o.kind !== 'Namespace') assert.equal(o.metadata.namespace, 'bootwright', `${what}: namespace`);
    }
  });

  it('the Deployment runs ONE SQLite replica, replaced (Recreate) so two pods never share its file, and selects its own pods', () => {
    assert.equal(deployment.spec.replicas, 1);
    assert.equal(deployment.spec.strategy?.type, 'Recreate');
    assert.equal(deployment.spec.strategy.rollingUpdate, undefined);
    assert.equal(podLabels['app.kubernetes.io/name'], 'bootwright');
    assert.ok(selects(deployment.spec.selector.matchLabels, podLabels));
    assert.equal(containers.length, 1);
    assert.equal(httpPort.name, 'http');
    assert.equal(httpPort.containerPort, 8080);
    assert.ok((podSpec.terminationGracePeriodSeconds ?? 30) >= 15, 'the grace period covers the 10 s drain');
  });

  it('every probe asks for a port the container exposes', () => {
    assert.ok(container.livenessProbe && container.readinessProbe);
    for (const [name, probe] of probes) {
      assert.ok(probe.httpGet?.path, `${name} is an httpGet probe with a path`);
      assert.ok(isHttpPort(probe.httpGet.port), `${name}: port ${String(probe.httpGet.port)}`);
    }
    assert.equal(container.livenessProbe.httpGet?.path, '/healthz');
    assert.equal(container.readinessProbe.httpGet?.path, '/readyz');
  });

  it('the cluster Service and the provisioning Service (LoadBalancer, the public URL\'s port) target the container port', () => {
    const service = serviceNamed('bootwright');
    assert.equal(service.spec.type ?? 'ClusterIP', 'ClusterIP');
    assert.ok(selects(service.spec.selector, podLabels));
    assert.equal(service.spec.ports.length, 1);
    const [port] = service.spec.ports;
    assert.equal(port?.port, 80);
    assert.ok(isHttpPort(port.targetPort), `targetPort ${String(port.targetPort)}`);

    const provisioning = serviceNamed('bootwright-provisioning');
    assert.ok(provisioning.spec.type === 'LoadBalancer' || provisioning.spec.type === 'NodePort', `type ${String(provisioning.spec.type)}`);
    assert.equal(provisioning.spec.externalTrafficPolicy, 'Local', "the audit log keeps the machine's own address");
    assert.ok(selects(provisioning.spec.selector, podLabels));
    assert.equal(provisioning.spec.ports.length, 1);
    const publicUrl = new URL(String(one('ConfigMap').data?.BOOTWRIGHT_PUBLIC_URL));
    assert.equal(provisioning.spec.ports[0]?.port, Number(publicUrl.port || 80), 'BOOTWRIGHT_PUBLIC_URL names the provisioning Service port');
    assert.ok(isHttpPort(provisioning.spec.ports[0].targetPort));
    const terms = podSpec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    assert.ok(
      terms.some((t) => t.podAffinityTerm.topologyKey === 'kubernetes.io/hostname' && selects(t.podAffinityTerm.labelSelector?.matchLabels, podLabels)),
      'pods prefer different nodes',
    );
  });

  it('the container is locked down: non-root, read-only root, no privilege escalation, no capabilities', () => {
    assert.equal(effective('runAsNonRoot'), true);
    assert.equal(typeof effective('runAsUser'), 'number');
    assert.notEqual(effective('runAsUser'), 0);
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities?.drop, ['ALL']);
    assert.equal(effective('seccompProfile')?.type, 'RuntimeDefault');
    assert.equal(podSpec.automountServiceAccountToken, false);
  });

  it('the data directory is the PersistentVolumeClaim (inventory, signing key survive a restart); /tmp an emptyDir', () => {
    const mounts = new Map((container.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    const volumes = new Map((podSpec.volumes ?? []).map((v) => [v.name, v]));
    const data = volumes.get(mounts.get('/var/lib/bootwright') ?? '');
    const pvc = one('PersistentVolumeClaim');
    assert.equal(data?.persistentVolumeClaim?.claimName, pvc.metadata?.name);
    assert.deepEqual(pvc.spec.accessModes, ['ReadWriteOnce']);
    assert.ok(pvc.spec.resources?.requests?.storage);
    assert.ok(volumes.get(mounts.get('/tmp') ?? '')?.emptyDir !== undefined, '/tmp is an emptyDir');
  });

  it('resources have requests and limits for cpu and memory', () => {
    for (const kind of ['requests', 'limits'] as const) {
      for (const r of ['cpu', 'memory']) assert.ok(container.resources?.[kind]?.[r] !== undefined, `resources.${kind}.${r}`);
    }
  });

  it('the container takes its environment from the ConfigMap and the token Secret', () => {
    const envFrom = container.envFrom ?? [];
    assert.ok(envFrom.some((e) => e.configMapRef?.name === one('ConfigMap').metadata?.name));
    assert.ok(envFrom.some((e) => e.secretRef?.name === one('Secret').metadata?.name));
  });

  it('every ConfigMap and Secret key is a real config variable, and the whole environment loads', () => {
    const configMap = one('ConfigMap');
    const secret = one('Secret');
    assert.ok(secret.stringData && 'BOOTWRIGHT_TOKENS' in secret.stringData, 'the Secret carries BOOTWRIGHT_TOKENS');
    assert.equal(secret.data, undefined, 'placeholders only, in stringData');
    assert.ok(configMap.data && !('BOOTWRIGHT_TOKENS' in configMap.data), 'tokens belong in the Secret');
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries({ ...configMap.data, ...secret.stringData })) {
      assert.match(key, /^BOOTWRIGHT_[A-Z0-9_]+$/);
      assert.ok(camel(key) in configSchema.shape, `${key} (${camel(key)}) is not a config key`);
      assert.ok(typeof value === 'string', `${key} must be a string in YAML (quote it)`);
      env[key] = value;
    }

    const config = loadConfig(env);
    assert.equal(config.port, httpPort.containerPort);
    assert.equal(config.host, '0.0.0.0');
    assert.ok(config.tokens.length > 0, 'tokens must be configured (the replicated overlay shares them)');
    assert.equal(config.publicUrl, 'http://192.168.10.5:8080', 'BOOTWRIGHT_PUBLIC_URL is set (a placeholder to change)');
    assert.ok(config.tokens.every((t) => t.sha256 !== undefined && t.token === undefined), 'the Secret holds hashes, not tokens');
    assert.ok((container.volumeMounts ?? []).some((m) => m.mountPath === config.dataDir), 'dataDir is a mounted volume');
  });
});

// ---------------------------------------------------------------------------------
// The replicated overlay (PostgreSQL)
// ---------------------------------------------------------------------------------

const overlayFiles = readdirSync(overlayDir)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();
/** The one object of an overlay file. */
const overlayDoc = (file: string): K8sObject => {
  const docs = loadAll(read(new URL(file, overlayDir))).filter(isObject);
  assert.equal(docs.length, 1, `${file} holds one object`);
  return docs[0]!;
};
const overlay: Kustomization = overlayDoc('kustomization.yaml');
const patchFiles = (overlay.patches ?? []).map((p) => p.path ?? '(inline)');
const overlayPatches = patchFiles.map((f) => overlayDoc(f));
const patchOf = (kind: string): K8sObject => {
  const found = overlayPatches.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind} patch`);
  return found[0]!;
};
const deploymentPatch = patchOf('Deployment') as Deployment;
const pvcDelete = patchOf('PersistentVolumeClaim') as PersistentVolumeClaim & { $patch?: string };
const overlayPdb = overlayDoc('pdb.yaml') as PodDisruptionBudget;
const patchedContainer = deploymentPatch.spec.template.spec.containers[0]!;
const databaseSecret: Secret = overlayDoc('database-secret.yaml');
const overlayProbes = (['livenessProbe', 'readinessProbe', 'startupProbe'] as const).flatMap((name) => {
  const probe = patchedContainer[name];
  return probe ? [[`replicated ${name}`, probe] as const] : [];
});

/** The overlay as kubectl builds it; undefined when kubectl is not installed. */
function kustomizeBuild(dir: URL): K8sObject[] | undefined {
  try {
    return loadAll(execFileSync('kubectl', ['kustomize', dir.pathname], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })).filter(isObject);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

describe('deploy/kubernetes/replicated overlay', () => {
  it('kubectl kustomize builds the base: one replica on its claim, both Services, the public URL', (t) => {
    const built = kustomizeBuild(k8sTop);
    if (!built) {
      t.skip('*** kubectl not installed: the base was checked file by file only ***');
      return;
    }
    const d = built.find((o): o is Deployment => o.kind === 'Deployment')!;
    assert.equal(d.spec.replicas, 1);
    assert.equal(d.spec.strategy?.type, 'Recreate');
    assert.ok((d.spec.template.spec.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === 'bootwright-data'));
    assert.deepEqual(built.filter((o) => o.kind === 'Service').map((o) => o.metadata?.name).sort(), ['bootwright', 'bootwright-provisioning']);
    assert.equal((built.find((o) => o.kind === 'ConfigMap') as ConfigMap).data?.BOOTWRIGHT_PUBLIC_URL, 'http://192.168.10.5:8080');
  });

  it('builds on the base and lists every other file as a resource or a patch', () => {
    assert.equal(overlay.kind, 'Kustomization');
    assert.ok(overlay.resources?.includes('../base'));
    const listed = [...(overlay.resources ?? []).filter((r) => r !== '../base'), ...patchFiles].sort();
    assert.deepEqual(listed, overlayFiles.filter((f) => f !== 'kustomization.yaml'));
  });

  it('patches the base Deployment, deletes its PersistentVolumeClaim, by kind, name and namespace, and its container by name', () => {
    assert.equal(pvcDelete.$patch, 'delete');
    for (const [patch, base] of [
      [deploymentPatch, deployment],
      [pvcDelete, one('PersistentVolumeClaim')],
    ] as const) {
      assert.equal(patch.apiVersion, base.apiVersion);
      assert.equal(patch.metadata?.name, base.metadata?.name);
      assert.equal(patch.metadata?.namespace, base.metadata?.namespace);
    }
    assert.equal(deploymentPatch.spec.template.spec.containers.length, 1);
    assert.equal(patchedContainer.name, container.name);
  });

  it('runs at least 2 replicas rolling without losing capacity, on emptyDirs, and its PDB keeps one serving yet allows a drain', () => {
    const replicas = deploymentPatch.spec.replicas ?? 0;
    assert.ok(replicas >= 2, `replicas ${replicas}`);
    assert.equal(deploymentPatch.spec.strategy?.type, 'RollingUpdate');
    assert.equal(deploymentPatch.spec.strategy.rollingUpdate?.maxUnavailable, 0);
    const data = (deploymentPatch.spec.template.spec.volumes ?? []).find((v) => v.name === 'data');
    assert.equal(data?.persistentVolumeClaim, null, 'the claim is removed from the pod');
    assert.ok(data.emptyDir);
    assert.equal(overlayPdb.apiVersion, 'policy/v1');
    const minAvailable = overlayPdb.spec.minAvailable;
    assert.ok(typeof minAvailable === 'number' && minAvailable >= 1 && minAvailable < replicas, `minAvailable ${String(minAvailable)} of ${replicas}`);
    assert.ok(selects(overlayPdb.spec.selector.matchLabels, podLabels));
  });

  it('the database URL and the URL-signing key come from the Secret, by key names it holds', () => {
    assert.equal(databaseSecret.kind, 'Secret');
    assert.equal(databaseSecret.metadata?.namespace, 'bootwright');
    assert.equal(databaseSecret.metadata.labels?.['app.kubernetes.io/name'], 'bootwright');
    assert.equal(databaseSecret.data, undefined, 'placeholders only, in stringData');
    const env = patchedContainer.env ?? [];
    const byName = new Map(env.map((e) => [e.name, e]));
    for (const name of ['BOOTWRIGHT_DATABASE_URL', 'BOOTWRIGHT_URL_SIGNING_KEY']) {
      const ref = byName.get(name)?.valueFrom?.secretKeyRef;
      assert.ok(ref, `${name} from a secretKeyRef`);
      assert.equal(byName.get(name)?.value, undefined, `${name} has no literal value`);
      assert.equal(ref.name, databaseSecret.metadata.name);
      assert.ok(databaseSecret.stringData && ref.key in databaseSecret.stringData, `the Secret holds key ${ref.key}`);
    }
    for (const e of env) assert.ok(camel(e.name) in configSchema.shape, `${e.name} is a config variable`);
    // Every key of the Secret is used.
    const used = new Set(env.map((e) => e.valueFrom?.secretKeyRef?.key));
    for (const key of Object.keys(databaseSecret.stringData ?? {})) assert.ok(used.has(key), `Secret key ${key} is unused`);
  });

  it('the whole environment loads with PostgreSQL selected, and the placeholder key is refused', () => {
    const values = databaseSecret.stringData ?? {};
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries({ ...one('ConfigMap').data, ...one('Secret').stringData })) env[key] = String(value);
    for (const e of patchedContainer.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      env[e.name] = ref ? String(values[ref.key]) : (e.value ?? '');
    }
    const config = loadConfig(env);
    assert.match(config.databaseUrl ?? '', /^postgres(ql)?:\/\//);
    assert.ok(config.tokens.length > 0, 'replicas must share configured tokens');
    // A placeholder that worked would be a key everyone knows: the service must refuse to
    // start with it (the key is decoded when the server is built).
    assert.ok(config.urlSigningKey !== undefined);
    assert.throws(() => decodeConfiguredKey(config.urlSigningKey ?? ''), ConfigError);
  });

  it('readiness probes /readyz (which pings the database) on the http port, within its timeout', () => {
    const probe = patchedContainer.readinessProbe;
    assert.equal(probe?.httpGet?.path, '/readyz');
    assert.ok(isHttpPort(probe.httpGet.port));
    // The store ping gives up after 1.5 s (PING_TIMEOUT_MS): inside the probe's timeout.
    assert.ok((probe.timeoutSeconds ?? 1) * 1000 > PING_TIMEOUT_MS);
  });

  it('kubectl kustomize builds it: the rendered objects agree', (t) => {
    const built = kustomizeBuild(overlayDir);
    if (!built) {
      t.skip('*** kubectl not installed: the overlay was checked file by file only ***');
      return;
    }
    const of = (kind: string, name?: string): K8sObject => {
      const found = built.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
      assert.equal(found.length, 1, `one ${kind} ${name ?? ''}`);
      return found[0]!;
    };
    const d = of('Deployment') as Deployment;
    const pdb = of('PodDisruptionBudget') as PodDisruptionBudget;
    const c = d.spec.template.spec.containers[0]!;
    const labels = d.spec.template.metadata?.labels ?? {};
    assert.equal(d.spec.replicas, deploymentPatch.spec.replicas);
    assert.ok(selects(d.spec.selector.matchLabels, labels));
    assert.ok(selects(pdb.spec.selector.matchLabels, labels));
    assert.equal(pdb.spec.minAvailable, overlayPdb.spec.minAvailable);
    assert.ok(selects((of('Service', 'bootwright') as Service).spec.selector, labels));
    assert.equal((of('Service', 'bootwright-provisioning') as Service).spec.type, 'LoadBalancer');
    assert.equal(built.filter((o) => o.kind === 'PersistentVolumeClaim').length, 0);
    assert.equal(d.spec.strategy?.type, 'RollingUpdate');
    const volumes = d.spec.template.spec.volumes ?? [];
    assert.ok(volumes.every((v) => v.persistentVolumeClaim === undefined), 'no pod mounts a claim');
    assert.equal(c.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(c.livenessProbe?.httpGet?.path, '/healthz');
    // The base environment stays; the database comes on top of it.
    assert.deepEqual(c.envFrom, container.envFrom);
    const secret: Secret = of('Secret', databaseSecret.metadata?.name);
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) assert.ok(ref.name === secret.metadata?.name && secret.stringData && ref.key in secret.stringData, `${e.name}: ${ref.name}/${ref.key}`);
    }
    assert.ok((c.env ?? []).some((e) => e.name === 'BOOTWRIGHT_DATABASE_URL'));
  });
});

describe('deploy/kubernetes probe paths are served by the service', () => {
  let app: FastifyInstance | undefined;
  before(async () => {
    // A data directory of its own: the signing key is generated there, not in the clone's ./data.
    const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-probes-'));
    const config = loadConfig({}, { dataDir, tokens: [{ name: 't', token: 'x'.repeat(20), scopes: ['admin'] }], logLevel: 'silent', rateLimitMax: 0, maxEventLoopDelayMs: 0 });
    app = await buildServer({ config });
    await app.ready();
  });
  after(async () => {
    await app?.close();
  });

  for (const [name, probe] of [...probes, ...overlayProbes]) {
    const path = probe.httpGet?.path ?? '(none)';
    it(`${name} GET ${path} answers 200 without a token`, async () => {
      assert.ok(app);
      const res = await app.inject({ method: 'GET', url: path });
      assert.equal(res.statusCode, 200, res.body);
    });
  }
});

// ---------------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
}

/** The Dockerfile's instructions (continuations joined, comments dropped), by stage. */
function dockerStages(text: string): { from: string; name?: string; instructions: Instruction[] }[] {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue; // comment inside a continuation
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(current + line);
    current = '';
  }
  if (current.trim()) logical.push(current.trim());
  const stages: { from: string; name?: string; instructions: Instruction[] }[] = [];
  for (const line of logical) {
    const m = /^(\S+)\s*(.*)$/.exec(line)!;
    const ins = { op: m[1]!.toUpperCase(), args: m[2]!.trim() };
    if (ins.op === 'FROM') {
      const f = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)!;
      stages.push({ from: f[1]!, ...(f[2] ? { name: f[2] } : {}), instructions: [] });
    } else {
      assert.ok(stages.length > 0 || ins.op === 'ARG', `instruction before FROM: ${line}`);
      stages.at(-1)?.instructions.push(ins);
    }
  }
  return stages;
}

const dockerfile = read(new URL('Dockerfile', root));
const stages = dockerStages(dockerfile);
const final = stages.at(-1)!;
const finalOps = (op: string) => final.instructions.filter((i) => i.op === op);
/** `npm ci|install` without the devDependencies. */
const installsProdOnly = (run: string) => /\bnpm\s+(ci|install|i)\b[^&|;]*(--omit[= ]dev|--production|--only[= ]prod)/.test(run);
const installsAll = (run: string) => /\bnpm\s+(ci|install|i)\b/.test(run) && !installsProdOnly(run);
/** `npm prune` of the devDependencies. */
const prunesDev = (run: string) => /\bnpm\s+prune\b[^&|;]*(--omit[= ]dev|--production)/.test(run);
/** Every RUN that installs packages, across all stages. */
const installRuns = () => stages.flatMap((s) => s.instructions.filter((i) => i.op === 'RUN' && /\bnpm\s+(ci|install|i)\b/.test(i.args)));

describe('Dockerfile', () => {
  it('is multi-stage on node:24-bookworm-slim (Node.js 24 LTS)', () => {
    assert.ok(stages.length >= 2);
    assert.ok(stages.every((s) => s.from === 'node:24-bookworm-slim' || stages.some((t) => t.name === s.from)), stages.map((s) => s.from).join(', '));
    assert.equal(final.from, 'node:24-bookworm-slim');
  });

  it('installs (and so compiles better-sqlite3) once, in one stage', () => {
    assert.equal(installRuns().length, 1, installRuns().map((r) => r.args).join('\n'));
  });

  it('runs as a numeric non-root user, the same UID the Deployment verifies', () => {
    const users = finalOps('USER');
    assert.ok(users.length > 0, 'USER in the final stage');
    const user = users.at(-1)!.args;
    assert.match(user, /^\d+(:\d+)?$/, 'USER must be numeric for runAsNonRoot');
    const uid = Number(user.split(':')[0]);
    assert.notEqual(uid, 0);
    assert.equal(uid, effective('runAsUser'));
  });

  it('has a HEALTHCHECK on /healthz that needs no curl or wget', () => {
    const checks = finalOps('HEALTHCHECK');
    assert.equal(checks.length, 1);
    const check = checks[0]!.args;
    assert.match(check, /\bCMD\b/);
    assert.match(check, /\/healthz/);
    assert.doesNotMatch(check, /\b(curl|wget)\b/);
  });

  it('starts `node dist/cli.js serve` in exec form, stops on SIGTERM and exposes the container port', () => {
    const cmd = finalOps('CMD').at(-1);
    assert.ok(cmd, 'CMD in the final stage');
    assert.ok(cmd.args.startsWith('['), 'CMD must be in exec form so SIGTERM reaches node');
    assert.deepEqual(JSON.parse(cmd.args), ['node', 'dist/cli.js', 'serve']);
    assert.equal(finalOps('ENTRYPOINT').length, 0);
    const stop = finalOps('STOPSIGNAL').at(-1)?.args;
    assert.ok(stop === undefined || stop === 'SIGTERM');
    assert.ok(finalOps('EXPOSE').some((e) => e.args.split(/\s+/).includes(String(httpPort.containerPort))));
  });

  it('sets the container environment: production, all interfaces, the data directory', () => {
    const env = finalOps('ENV')
      .map((e) => e.args)
      .join(' ');
    assert.match(env, /\bNODE_ENV=production\b/);
    assert.match(env, /\bBOOTWRIGHT_HOST=0\.0\.0\.0\b/);
    assert.match(env, /\bBOOTWRIGHT_DATA_DIR=\/var\/lib\/bootwright\b/);
  });

  it('the final stage holds no devDependencies', () => {
    const runs = finalOps('RUN').map((r) => r.args);
    assert.ok(!runs.some(installsAll), 'the final stage must not install devDependencies');
    const modules = finalOps('COPY').filter((c) => c.args.includes('node_modules'));
    for (const copy of modules) {
      const from = /--from=(\S+)/.exec(copy.args)?.[1];
      assert.ok(from, `node_modules must come from a build stage: ${copy.args}`);
      const source = stages.find((s) => s.name === from) ?? stages[Number(from)];
      assert.ok(source, `no stage ${from}`);
      const sourceRuns = source.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
      // Either installed without devDependencies, or installed whole and pruned after the last install.
      const lastInstall = sourceRuns.findLastIndex((r) => installsAll(r) || installsProdOnly(r));
      const prunedAfter = sourceRuns.findIndex((r, i) => i >= lastInstall && prunesDev(r)) >= 0;
      assert.ok(prunedAfter || (sourceRuns.some(installsProdOnly) && !sourceRuns.some(installsAll)), `stage ${from} must install with --omit=dev or prune the devDependencies after installing`);
    }
    assert.ok(modules.length > 0 || runs.some(installsProdOnly), 'the runtime dependencies are installed or copied');
  });

  it('the final stage copies only dist/, node_modules and package.json', () => {
    for (const copy of finalOps('COPY')) {
      const parts = copy.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const sources = parts.slice(0, -1).map((s) => s.replace(/\/+$/, '').split('/').at(-1));
      for (const s of sources) assert.ok(['dist', 'node_modules', 'package.json'].includes(s!), `final stage copies ${s ?? '(nothing)'}`);
    }
    assert.equal(finalOps('ADD').length, 0);
  });

  it('.dockerignore keeps local builds, data and the repository out of the context', () => {
    const ignored = read(new URL('.dockerignore', root))
      .split('\n')
      .map((l) => l.trim().replace(/^\/|\/$/g, ''))
      .filter((l) => l && !l.startsWith('#'));
    for (const p of ['node_modules', 'dist', 'data', '.git', '.tmp']) assert.ok(ignored.includes(p), `.dockerignore lists ${p}`);
  });
});
