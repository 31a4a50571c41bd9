/**
 * One reconcile of a KubeadmConfig (`bootstrap.cluster.x-k8s.io/v1beta2`), step for step
 * as Cluster API's kubeadm bootstrap provider (CABPK) does it
 * (`bootstrap/kubeadm/internal/controllers/kubeadmconfig_controller.go`, v1.14), with
 * bootwright's renderer in place of CABPK's templates:
 *
 * 1. the owner (a Machine or MachinePool of `cluster.x-k8s.io`, by ownerReference) and
 *    its Cluster (`spec.clusterName`); none yet: wait for the owner's event;
 * 2. a paused Cluster or config (`spec.paused`, `cluster.x-k8s.io/paused`) is left alone
 *    but for the `Paused` condition;
 * 3. wait for `Cluster.status.initialization.infrastructureProvisioned`;
 * 4. the owner already names a data Secret but the config's status is empty (after
 *    `clusterctl move` or a restore, which drop status): set the status again;
 * 5. data already written: refresh the join token until the owner has a node (every
 *    TTL/3), rotate a MachinePool's;
 * 6. control plane not initialised: workers and joining control-plane Machines wait
 *    (30 s); the first control-plane Machine with an init or cluster configuration takes
 *    the init lock ({@link acquireInitLock}) and gets `kubeadm init` (generating the
 *    cluster's certificate authorities first when the Cluster has no control plane
 *    provider, src/controller/generate.ts);
 * 7. otherwise the lock is released and the Machine joins: its token (created in the
 *    workload cluster through `<cluster>-kubeconfig`, written back into the config's
 *    `joinConfiguration.discovery.bootstrapToken` before it exists, so a restart never
 *    makes a second one), CA pins from `<cluster>-ca`, `apiServerEndpoint` from the
 *    Cluster (waiting while unset).
 *
 * The data Secret is named after the config, in its namespace, type
 * `cluster.x-k8s.io/secret`, keys `value` and `format`, label
 * `cluster.x-k8s.io/cluster-name`, controlled by the config. Then `status.dataSecretName`,
 * `status.initialization.dataSecretCreated` and the conditions ({@link setConditions}) are
 * written. A config that cannot render gets `Ready=False` with the field paths and
 * messages the HTTP API gives for the same input; nothing a reconcile meets throws past
 * {@link Reconciler.reconcile} but the API server's own errors, which the queue retries.
 */
import type { Logger } from 'pino';
import { RequestError } from '../errors.js';
import { renderNodeBootstrap, type RenderResult } from '../render.js';
import { DEFAULT_DOCUMENT_LIMITS } from '../request/bounds.js';
import { checkBounds } from '../request/bounds.js';
import { formatPath } from '../request/parse.js';
import { validateNodeBootstrap } from '../request/parse.js';
import type { Role } from '../request/schema.js';
import {
  BOOTSTRAP_API,
  CLUSTER_NAME_LABEL,
  CLUSTER_SECRET_TYPE,
  type Cluster,
  type ConfigOwner,
  CORE_API,
  CORE_GROUP,
  controlPlaneEndpoint,
  controlPlaneInitialized,
  IGNITION_VERSION_ANNOTATION,
  isControlPlane,
  isPaused,
  type KubeadmConfig,
  type Machine,
  type MachinePool,
  ownerDataSecretName,
  ownerHasNodes,
  ownerVersion,
  WATCH_FILTER_LABEL,
} from './capi.js';
import { readClusterCertificates } from './certificates.js';
import { ENCRYPTION_ALGORITHMS, generateClusterCertificates } from './generate.js';
import { CERTIFICATES_AVAILABLE, type ConditionInput, DATA_SECRET_AVAILABLE, PAUSED, REASON, setConditions, v1beta1Conditions } from './conditions.js';
import { type EventRecorder } from './events.js';
import { apiErrorText, isConflict, Kube, type KubeObject } from '../kube/client.js';
import { acquireInitLock, releaseInitLock } from './lock.js';
import { bootstrapRequest, problemsMessage, referencedSecrets } from './request.js';
import { createTokenSecret, newToken, refreshTokenSecret, tokenNeedsRotation } from '../kube/token.js';

/** How the controller was started (`bootwright controller` flags). */
export interface ReconcilerOptions {
  /** `--bootstrap-token-ttl`, in milliseconds (CABPK's default: 15 minutes). */
  tokenTtlMs: number;
  /**
   * `--ignition-version`: the Ignition spec for `format: ignition` configs without the
   * {@link IGNITION_VERSION_ANNOTATION} annotation: `2.3` (CABPK's, the default), `3` (the
   * lowest 3.x that expresses the config) or a 3.x version.
   */
  ignitionVersion: string;
  /** `--watch-filter`: only objects labelled `cluster.x-k8s.io/watch-filter=<value>`. */
  watchFilter?: string;
}

/** When to reconcile the config again (besides the events of what it watches). */
export interface ReconcileResult {
  requeueAfterMs?: number;
}

/** CABPK's wait while another Machine initialises the control plane, or a worker waits for it. */
export const WAIT_MS = 30_000;
/** CABPK's wait for `Cluster.spec.controlPlaneEndpoint`, or for certificates. */
export const SHORT_WAIT_MS = 10_000;

const b64 = (bytes: string | Uint8Array) => Buffer.from(bytes).toString('base64');

/** What one reconcile decided for the status. */
interface StatusDraft {
  conditions: ConditionInput[];
  dataSecretName?: string;
  /** Whether the reconcile finished (then `observedGeneration` is written). */
  complete: boolean;
}

/** Reconciles KubeadmConfigs against one management cluster. */
export class Reconciler {
  /** Workload cluster clients by `<namespace>/<cluster>`, for the kubeconfig Secret's resourceVersion. */
  private readonly workloads = new Map<string, { version: string; kube: Kube }>();

  constructor(
    private readonly kube: Kube,
    private readonly options: ReconcilerOptions,
    private readonly events: EventRecorder,
    private readonly log: Logger,
  ) {}

  /**
   * Reconcile the KubeadmConfig `namespace/name`.
   *
   * @throws the API server's errors (retried by the caller with backoff); a config that
   *   cannot render is not an error (its status says why)
   */
  async reconcile(namespace: string, name: string): Promise<ReconcileResult> {
    const config = await this.kube.get<KubeadmConfig>(BOOTSTRAP_API, 'KubeadmConfig', namespace, name);
    if (!config || config.metadata.deletionTimestamp) return {};
    if (this.options.watchFilter !== undefined && config.metadata.labels?.[WATCH_FILTER_LABEL] !== this.options.watchFilter) return {};
    const owner = await this.owner(config);
    if (!owner) return {};
    const cluster = await this.kube.get<Cluster>(CORE_API, 'Cluster', namespace, owner.object.spec.clusterName);
    if (!cluster) return { requeueAfterMs: WAIT_MS };

    if (isPaused(cluster, config)) {
      await this.writeStatus(config, { conditions: [{ type: PAUSED, status: 'True', reason: REASON.paused }], complete: false }, false);
      return {};
    }
    const draft: StatusDraft = { conditions: [{ type: PAUSED, status: 'False', reason: REASON.notPaused }], complete: true };
    try {
      return await this.steps(config, owner, cluster, draft);
    } catch (e) {
      draft.complete = false;
      throw e;
    } finally {
      await this.writeStatus(config, draft);
    }
  }

  /** Steps 3–7 of the module comment. */
  private async steps(config: KubeadmConfig, owner: ConfigOwner, cluster: Cluster, draft: StatusDraft): Promise<ReconcileResult> {
    const created = config.status?.initialization?.dataSecretCreated === true;
    await this.ensureSecretOwner(config);
    if (cluster.status?.initialization?.infrastructureProvisioned !== true) {
      draft.conditions.push({ type: DATA_SECRET_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: 'Waiting for Cluster status.initialization.infrastructureProvisioned to be true' });
      return {};
    }
    const known = ownerDataSecretName(owner);
    if (known !== undefined && (!created || !config.status?.dataSecretName)) {
      // After a move or a restore: the owner says the data exists.
      draft.dataSecretName = known;
      draft.conditions.push(...available());
      return {};
    }
    if (created) {
      draft.conditions.push(...available());
      return this.keepTokenFresh(config, owner, cluster, draft);
    }
    if (!controlPlaneInitialized(cluster)) return this.init(config, owner, cluster, draft);
    if (await releaseInitLock(this.kube, cluster)) this.log.info({ cluster: key(cluster) }, 'released the init lock: the control plane is initialised');
    return this.join(config, owner, cluster, draft);
  }

  /** Step 6: the first control-plane Machine takes the init lock and gets `kubeadm init`; others wait. */
  private async init(config: KubeadmConfig, owner: ConfigOwner, cluster: Cluster, draft: StatusDraft): Promise<ReconcileResult> {
    draft.conditions.push({ type: DATA_SECRET_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: 'Waiting for Cluster control plane to be initialized' });
    if (!isControlPlane(owner) || owner.kind !== 'Machine') return { requeueAfterMs: WAIT_MS };
    if (config.spec?.initConfiguration === undefined && config.spec?.clusterConfiguration === undefined) return { requeueAfterMs: WAIT_MS };
    const machine = owner.object;
    if (!(await acquireInitLock(this.kube, cluster, machine))) {
      this.log.info({ config: key(config) }, 'a control plane is already being initialized: waiting');
      return { requeueAfterMs: WAIT_MS };
    }
    let stored = false;
    try {
      let certs = await readClusterCertificates(this.kube, cluster, 'all');
      if (certs.missing.length > 0 && cluster.spec.controlPlaneRef === undefined) {
        // No control plane provider to make them: CABPK generates them, and so does bootwright.
        const algorithm = (config.spec.clusterConfiguration as { encryptionAlgorithm?: string } | undefined)?.encryptionAlgorithm;
        if (algorithm !== undefined && !ENCRYPTION_ALGORITHMS.includes(algorithm)) {
          const message = `cannot generate the cluster certificates: spec.clusterConfiguration.encryptionAlgorithm: must be one of ${ENCRYPTION_ALGORITHMS.join(', ')}`;
          draft.conditions.push({ type: CERTIFICATES_AVAILABLE, status: 'False', reason: REASON.notAvailable, message });
          await this.events.record(config, 'Warning', 'CertificatesGenerationFailed', message);
          return {};
        }
        const made = await generateClusterCertificates(this.kube, cluster, config, certs.missing);
        if (made.length > 0) await this.events.record(config, 'Normal', 'CertificatesGenerated', `generated ${made.join(', ')}: the Cluster has no control plane provider`);
        certs = await readClusterCertificates(this.kube, cluster, 'all');
      }
      if (certs.missing.length > 0) {
        draft.conditions.push({ type: CERTIFICATES_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: `Waiting for the Secrets ${certs.missing.join(', ')}` });
        return { requeueAfterMs: SHORT_WAIT_MS };
      }
      draft.conditions.push({ type: CERTIFICATES_AVAILABLE, status: 'True', reason: REASON.available });
      const secrets = await referencedSecrets(this.kube, config);
      stored = await this.renderAndStore(config, owner, cluster, 'init', { certificates: certs.certificates, caCertHashes: certs.caCertHashes, secrets }, draft);
      if (stored) await this.events.record(config, 'Normal', 'InitLockAcquired', `${machine.metadata.name} initialises the control plane of cluster ${cluster.metadata.name}`);
      return {};
    } finally {
      // A failed init frees the lock for another control-plane Machine (CABPK unlocks on error too).
      if (!stored) await releaseInitLock(this.kube, cluster);
    }
  }

  /** Step 7: a control-plane join or a worker join. */
  private async join(config: KubeadmConfig, owner: ConfigOwner, cluster: Cluster, draft: StatusDraft): Promise<ReconcileResult> {
    const role: Role = isControlPlane(owner) ? 'control-plane' : 'worker';
    const certs = await readClusterCertificates(this.kube, cluster, role === 'control-plane' ? 'all' : 'ca');
    if (certs.missing.length > 0) {
      draft.conditions.push(
        { type: CERTIFICATES_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: `Waiting for the Secrets ${certs.missing.join(', ')}` },
        { type: DATA_SECRET_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: 'Waiting for the cluster certificates' },
      );
      return { requeueAfterMs: SHORT_WAIT_MS };
    }
    draft.conditions.push({ type: CERTIFICATES_AVAILABLE, status: 'True', reason: REASON.available });

    const discovery = config.spec?.joinConfiguration?.discovery;
    let token: string | undefined;
    let caCertHashes = certs.caCertHashes;
    if (discovery?.file === undefined) {
      const given = discovery?.bootstrapToken;
      if (given?.caCertHashes?.length) caCertHashes = given.caCertHashes;
      const endpoint = given?.apiServerEndpoint !== undefined && given.apiServerEndpoint !== '' ? given.apiServerEndpoint : controlPlaneEndpoint(cluster);
      if (!endpoint) {
        draft.conditions.push({ type: DATA_SECRET_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: 'Waiting for Cluster spec.controlPlaneEndpoint' });
        return { requeueAfterMs: SHORT_WAIT_MS };
      }
      token = given?.token;
      const workload = await this.workload(cluster, draft);
      if (!workload) return { requeueAfterMs: SHORT_WAIT_MS };
      if (!token) {
        // Written into the config first: a restart after this finds it there, never makes a second.
        token = newToken();
        await this.kube.mergePatch(BOOTSTRAP_API, 'KubeadmConfig', config.metadata.namespace!, config.metadata.name, {
          metadata: { resourceVersion: config.metadata.resourceVersion },
          spec: { joinConfiguration: { discovery: { bootstrapToken: { token, apiServerEndpoint: endpoint, caCertHashes } } } },
        });
        await createTokenSecret(workload, token, this.options.tokenTtlMs);
        await this.events.record(config, 'Normal', 'BootstrapTokenCreated', `a bootstrap token for ${owner.object.metadata.name} in the workload cluster of ${cluster.metadata.name}`);
      } else if ((await refreshTokenSecret(workload, token, this.options.tokenTtlMs)) === 'missing') {
        // Written into the spec by an earlier reconcile that stopped before creating it.
        await createTokenSecret(workload, token, this.options.tokenTtlMs);
      }
    }
    const secrets = await referencedSecrets(this.kube, config);
    await this.renderAndStore(config, owner, cluster, role, { certificates: role === 'control-plane' ? certs.certificates : undefined, caCertHashes, secrets, bootstrapToken: token }, draft);
    return token ? { requeueAfterMs: this.options.tokenTtlMs / 3 } : {};
  }

  /**
   * Step 5, as CABPK does it (v1.14 kubeadmconfig_controller.go): while the owner's nodes
   * have not all joined ({@link ownerHasNodes}), refresh the join token's expiration (a
   * MachinePool whose token Secret is gone gets a new token and new data); once a
   * MachinePool's have, rotate its token when due, for its next scale-up. A joined
   * Machine's token is left to expire.
   */
  private async keepTokenFresh(config: KubeadmConfig, owner: ConfigOwner, cluster: Cluster, draft: StatusDraft): Promise<ReconcileResult> {
    const token = config.spec?.joinConfiguration?.discovery?.bootstrapToken?.token;
    if (!token || config.spec?.joinConfiguration?.discovery?.file !== undefined) return {};
    const joined = ownerHasNodes(owner);
    if (owner.kind === 'Machine' && joined) return {};
    const workload = await this.workload(cluster, draft);
    if (!workload) return { requeueAfterMs: SHORT_WAIT_MS };
    if (!joined) {
      if ((await refreshTokenSecret(workload, token, this.options.tokenTtlMs)) === 'missing') {
        if (owner.kind === 'MachinePool') await this.rotatePoolToken(config, owner, cluster, workload, draft, 'its Secret is gone from the workload cluster');
        else this.log.warn({ config: key(config) }, "the bootstrap token's Secret is gone from the workload cluster (expired or deleted) before the Machine joined");
      }
    } else if (owner.kind === 'MachinePool' && (await tokenNeedsRotation(workload, token, this.options.tokenTtlMs))) {
      await this.rotatePoolToken(config, owner, cluster, workload, draft, 'it is due for rotation');
    }
    return { requeueAfterMs: this.options.tokenTtlMs / 3 };
  }

  /** A new token and new data for a MachinePool's next nodes; the old token lapses. */
  private async rotatePoolToken(config: KubeadmConfig, owner: ConfigOwner, cluster: Cluster, workload: Kube, draft: StatusDraft, why: string): Promise<void> {
    const fresh = newToken();
    await this.kube.mergePatch(BOOTSTRAP_API, 'KubeadmConfig', config.metadata.namespace!, config.metadata.name, {
      metadata: { resourceVersion: config.metadata.resourceVersion },
      spec: { joinConfiguration: { discovery: { bootstrapToken: { token: fresh } } } },
    });
    await createTokenSecret(workload, fresh, this.options.tokenTtlMs);
    const updated = await this.kube.get<KubeadmConfig>(BOOTSTRAP_API, 'KubeadmConfig', config.metadata.namespace, config.metadata.name);
    if (!updated) return;
    const certs = await readClusterCertificates(this.kube, cluster, 'ca');
    const hashes = updated.spec?.joinConfiguration?.discovery?.bootstrapToken?.caCertHashes ?? certs.caCertHashes;
    await this.renderAndStore(updated, owner, cluster, 'worker', { caCertHashes: hashes, secrets: await referencedSecrets(this.kube, updated), bootstrapToken: fresh }, draft);
    await this.events.record(config, 'Normal', 'BootstrapTokenRotated', `a new bootstrap token for the MachinePool ${owner.object.metadata.name}: ${why}`);
  }

  /**
   * Render the config and write the data Secret; on a problem, `DataSecretAvailable=False`
   * with the problems' field paths (the config is not retried until it changes).
   *
   * @returns whether the data was written
   */
  private async renderAndStore(
    config: KubeadmConfig,
    owner: ConfigOwner,
    cluster: Cluster,
    role: Role,
    context: { certificates?: Parameters<typeof bootstrapRequest>[0]['certificates']; caCertHashes?: string[]; secrets: Record<string, unknown>[]; bootstrapToken?: string },
    draft: StatusDraft,
  ): Promise<boolean> {
    let result: RenderResult;
    try {
      const version = ownerVersion(owner);
      if (!version) throw new RequestError([{ path: 'spec.version', message: `the owner ${owner.kind} ${owner.object.metadata.name} has no spec.version: the node's Kubernetes version` }]);
      const input = bootstrapRequest({ config, nodeName: owner.object.metadata.name, role, kubernetesVersion: version, cluster, ...context });
      checkBounds(input, DEFAULT_DOCUMENT_LIMITS, formatPath);
      const request = validateNodeBootstrap(input);
      result = renderNodeBootstrap(request, { platform: null, ...this.ignitionVersion(config) });
    } catch (e) {
      if (!(e instanceof RequestError)) throw e;
      const message = problemsMessage(e.problems);
      draft.conditions.push({ type: DATA_SECRET_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: `cannot render the bootstrap data: ${message}` });
      this.log.warn({ config: key(config), problems: message }, 'the KubeadmConfig cannot render');
      await this.events.record(config, 'Warning', 'DataSecretGenerationFailed', message);
      return false;
    }
    await this.storeData(config, cluster, result);
    draft.dataSecretName = config.metadata.name;
    draft.conditions.push({ type: DATA_SECRET_AVAILABLE, status: 'True', reason: REASON.available });
    this.log.info({ config: key(config), role, format: result.format, sha256: result.sha256 }, 'wrote the bootstrap data');
    await this.events.record(config, 'Normal', 'DataSecretCreated', `Secret ${config.metadata.name}: ${role} data, ${result.format}${result.ignitionVersion ? ` ${result.ignitionVersion}` : ''}, ${result.size} bytes`);
    return true;
  }

  /** The Ignition spec for a config: its annotation, else the controller's flag; `3` means the lowest 3.x that expresses it. */
  private ignitionVersion(config: KubeadmConfig): { ignitionVersion?: string; ignitionVersionField?: string } {
    const annotated = config.metadata.annotations?.[IGNITION_VERSION_ANNOTATION];
    const value = annotated ?? this.options.ignitionVersion;
    const field = annotated !== undefined ? `metadata.annotations[${IGNITION_VERSION_ANNOTATION}]` : '--ignition-version';
    return value === '3' ? {} : { ignitionVersion: value, ignitionVersionField: field };
  }

  /** Write the data Secret (create, or update the one there), exactly per the contract. */
  private async storeData(config: KubeadmConfig, cluster: Cluster, result: RenderResult): Promise<void> {
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: config.metadata.name,
        namespace: config.metadata.namespace!,
        labels: { [CLUSTER_NAME_LABEL]: cluster.metadata.name },
        ownerReferences: [controllerRef(config)],
      },
      type: CLUSTER_SECRET_TYPE,
      data: { value: b64(result.gzip ?? result.body), format: b64(result.format === 'ignition' ? 'ignition' : 'cloud-config') },
    };
    try {
      await this.kube.create(secret);
    } catch (e) {
      if (!isConflict(e)) throw e;
      const existing = await this.kube.get('v1', 'Secret', secret.metadata.namespace, secret.metadata.name);
      if (!existing) throw e;
      await this.kube.replace({ ...secret, metadata: { ...secret.metadata, resourceVersion: existing.metadata.resourceVersion } });
    }
  }

  /** Re-assert the data Secret's controller ownerReference (CABPK's `ensureBootstrapSecretOwnersRef`; it is lost by some restores). */
  private async ensureSecretOwner(config: KubeadmConfig): Promise<void> {
    const secret = await this.kube.get('v1', 'Secret', config.metadata.namespace, config.metadata.name);
    if (!secret) return;
    const refs = secret.metadata.ownerReferences ?? [];
    if (refs.some((r) => r.uid === config.metadata.uid && r.controller === true)) return;
    const others = refs.filter((r) => !(r.kind === 'KubeadmConfig' && r.name === config.metadata.name)).map((r) => ({ ...r, controller: false }));
    await this.kube.mergePatch('v1', 'Secret', config.metadata.namespace!, config.metadata.name, { metadata: { ownerReferences: [...others, controllerRef(config)] } });
  }

  /** The workload cluster's client, from `<cluster>-kubeconfig` (key `value`); undefined (and a condition) while it does not exist. */
  private async workload(cluster: Cluster, draft: StatusDraft): Promise<Kube | undefined> {
    const name = `${cluster.metadata.name}-kubeconfig`;
    const secret = await this.kube.get('v1', 'Secret', cluster.metadata.namespace, name);
    const value = (secret?.data as Record<string, string> | undefined)?.value;
    if (!secret || !value) {
      draft.conditions.push({ type: DATA_SECRET_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: `Waiting for the Secret ${name} (the workload cluster's kubeconfig)` });
      return undefined;
    }
    const cacheKey = key(cluster);
    const cached = this.workloads.get(cacheKey);
    if (cached && cached.version === secret.metadata.resourceVersion) return cached.kube;
    let kube: Kube;
    try {
      kube = Kube.fromKubeconfig(Buffer.from(value, 'base64').toString('utf8'));
    } catch {
      draft.conditions.push({ type: DATA_SECRET_AVAILABLE, status: 'False', reason: REASON.notAvailable, message: `the Secret ${name} key value is not a kubeconfig` });
      return undefined;
    }
    this.workloads.set(cacheKey, { version: secret.metadata.resourceVersion ?? '', kube });
    return kube;
  }

  /** The config's owner: the Machine or MachinePool of its ownerReferences, read. */
  private async owner(config: KubeadmConfig): Promise<ConfigOwner | undefined> {
    for (const ref of config.metadata.ownerReferences ?? []) {
      if (!ref.apiVersion.startsWith(`${CORE_GROUP}/`)) continue;
      if (ref.kind === 'Machine') {
        const object = await this.kube.get<Machine>(CORE_API, 'Machine', config.metadata.namespace, ref.name);
        if (object) return { kind: 'Machine', object };
      }
      if (ref.kind === 'MachinePool') {
        const object = await this.kube.get<MachinePool>(CORE_API, 'MachinePool', config.metadata.namespace, ref.name);
        if (object) return { kind: 'MachinePool', object };
      }
    }
    return undefined;
  }

  /** Patch the status (conditions, data Secret name, observedGeneration when the reconcile finished). */
  private async writeStatus(config: KubeadmConfig, draft: StatusDraft, summarise = true): Promise<void> {
    const generation = config.metadata.generation;
    const conditions = setConditions(config.status?.conditions, draft.conditions, generation, new Date(), summarise);
    const status: Record<string, unknown> = { conditions, deprecated: { v1beta1: { conditions: v1beta1Conditions(conditions) } } };
    if (draft.dataSecretName) Object.assign(status, { dataSecretName: draft.dataSecretName, initialization: { dataSecretCreated: true } });
    if (draft.complete && generation !== undefined) status.observedGeneration = generation;
    try {
      await this.kube.patchStatus(BOOTSTRAP_API, 'KubeadmConfig', config.metadata.namespace!, config.metadata.name, status);
    } catch (e) {
      this.log.warn({ config: key(config), err: apiErrorText(e) }, 'could not write the status');
      throw e;
    }
  }
}

/** The two conditions of written data. */
function available(): ConditionInput[] {
  return [
    { type: DATA_SECRET_AVAILABLE, status: 'True', reason: REASON.available },
    { type: CERTIFICATES_AVAILABLE, status: 'True', reason: REASON.available },
  ];
}

/** A controller ownerReference to the config, as CABPK writes it (no `blockOwnerDeletion`). */
function controllerRef(config: KubeadmConfig) {
  return { apiVersion: BOOTSTRAP_API, kind: 'KubeadmConfig', name: config.metadata.name, uid: config.metadata.uid!, controller: true };
}

/** `namespace/name` of an object, for logs. */
const key = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
