/**
 * A KubeadmConfigSpec of `bootstrap.cluster.x-k8s.io/v1beta1` as the v1beta2 object the
 * API server stores, the way CABPK's conversion webhook converts it
 * (`api/bootstrap/kubeadm/v1beta1/conversion.go`, Cluster API v1.11+): argument maps
 * (`extraArgs`, `kubeletExtraArgs`) become `{name, value}` lists sorted by name;
 * `apiServer.timeoutForControlPlane` becomes
 * `initConfiguration.timeouts.controlPlaneComponentHealthCheckSeconds`;
 * `discovery.timeout` becomes `joinConfiguration.timeouts.tlsBootstrapSeconds`;
 * `bootstrapTokens[].ttl` becomes `ttlSeconds`; what v1beta2 no longer has is dropped
 * (`useExperimentalRetryJoin`; `clusterConfiguration.networking`, `kubernetesVersion`,
 * `controlPlaneEndpoint` and `clusterName`, which v1beta2 takes from the Cluster and the
 * Machine); and empty lists, maps and structs are left out, as the v1beta2 types'
 * `omitempty`/`omitzero` serialise them (the v1beta2 CRD refuses them: `minItems: 1`,
 * `minProperties: 1`).
 *
 * The test API server has the CRDs without CABPK's webhook, so tests convert published
 * v1beta1 templates with this before creating them, and create them with
 * `fieldValidation=Strict`: a field this misses is refused by the API server, not lost.
 */

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The Cluster's `spec.clusterNetwork` a v1beta1 template's `clusterConfiguration.networking`
 * stands for (v1beta2 reads the networking from the Cluster only), or undefined when the
 * template sets none. Unset parts are the Cluster API quick start's.
 */
export function clusterNetworkOf(spec: Doc): Doc | undefined {
  const cluster = spec.clusterConfiguration;
  const networking = isDoc(cluster) && isDoc(cluster.networking) ? (cluster.networking as { podSubnet?: string; serviceSubnet?: string; dnsDomain?: string }) : undefined;
  if (!networking) return undefined;
  return {
    pods: { cidrBlocks: [networking.podSubnet ?? '192.168.0.0/16'] },
    services: { cidrBlocks: [networking.serviceSubnet ?? '10.96.0.0/12'] },
    serviceDomain: networking.dnsDomain ?? 'cluster.local',
  };
}

/** Go's `time.Duration` text (`20m`, `1h30m`, `90s`) in whole seconds. */
function seconds(text: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) total += Number(n) * units[unit!]!;
  return Math.round(total);
}

/** A v1beta1 argument map as a v1beta2 list; a list (already v1beta2) is kept. */
function args(value: unknown): unknown {
  if (!isDoc(value)) return value;
  return Object.keys(value)
    .sort()
    .map((name) => ({ name, value: String(value[name]) }));
}

/** Convert in place: the argument maps of a component (`apiServer`, `etcd.local`, `nodeRegistration`). */
function convertArgs(doc: unknown, key: 'extraArgs' | 'kubeletExtraArgs'): void {
  if (isDoc(doc) && doc[key] !== undefined) doc[key] = args(doc[key]);
}

/**
 * The v1beta2 spec of a v1beta1 (or v1beta1-shaped) KubeadmConfigSpec; the input is not changed.
 */
export function kubeadmConfigSpecToV1beta2(spec: Doc): Doc {
  const out = structuredClone(spec);
  delete out.useExperimentalRetryJoin;
  const cluster = out.clusterConfiguration;
  if (isDoc(cluster)) {
    delete cluster.networking;
    delete cluster.kubernetesVersion;
    delete cluster.controlPlaneEndpoint;
    delete cluster.clusterName;
    for (const component of ['apiServer', 'controllerManager', 'scheduler']) convertArgs(cluster[component], 'extraArgs');
    if (isDoc(cluster.etcd)) convertArgs(cluster.etcd.local, 'extraArgs');
    const apiServer = cluster.apiServer;
    if (isDoc(apiServer) && typeof apiServer.timeoutForControlPlane === 'string') {
      const init = isDoc(out.initConfiguration) ? out.initConfiguration : (out.initConfiguration = {});
      init.timeouts = { ...(isDoc(init.timeouts) ? init.timeouts : {}), controlPlaneComponentHealthCheckSeconds: seconds(apiServer.timeoutForControlPlane) };
      delete apiServer.timeoutForControlPlane;
    }
  }
  for (const key of ['initConfiguration', 'joinConfiguration']) {
    const config = out[key];
    if (!isDoc(config)) continue;
    convertArgs(config.nodeRegistration, 'kubeletExtraArgs');
    for (const token of Array.isArray(config.bootstrapTokens) ? (config.bootstrapTokens as unknown[]) : []) {
      if (isDoc(token) && typeof token.ttl === 'string') {
        token.ttlSeconds = seconds(token.ttl);
        delete token.ttl;
      }
    }
    if (isDoc(config.discovery) && typeof config.discovery.timeout === 'string') {
      config.timeouts = { ...(isDoc(config.timeouts) ? config.timeouts : {}), tlsBootstrapSeconds: seconds(config.discovery.timeout) };
      delete config.discovery.timeout;
    }
  }
  return withoutEmpty(out) as Doc;
}

/** The value without empty lists and maps at any depth (a value that becomes empty is left out too). */
function withoutEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEmpty);
  if (!isDoc(value)) return value;
  const out: Doc = {};
  for (const [k, v] of Object.entries(value)) {
    const kept = withoutEmpty(v);
    if ((Array.isArray(kept) && kept.length === 0) || (isDoc(kept) && Object.keys(kept).length === 0)) continue;
    out[k] = kept;
  }
  return out;
}
