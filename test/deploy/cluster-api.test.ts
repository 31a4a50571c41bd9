/**
 * bootwright's clusterctl release assets (deploy/cluster-api/): `metadata.yaml` as
 * clusterctl validates it, and `bootstrap-components.yaml` with its `${VAR:=default}`
 * variables substituted as clusterctl substitutes them: one Namespace, every object
 * labelled `cluster.x-k8s.io/provider: bootstrap-bootwright`, a Deployment whose container
 * is `manager` and whose arguments are flags `bootwright controller` accepts, probes on
 * routes the controller serves, no CRDs (CABPK's are used).
 *
 * Then on a real API server: the components are created as they are (strict field
 * validation, the Deployment included), and the controller runs as their ServiceAccount,
 * with a token from the TokenRequest API, the Deployment's own arguments and only the
 * RBAC the file grants: it elects itself, initialises a control plane and joins a worker
 * without one request refused (403), which shows the rules suffice; the rules are also
 * compared with the calls the controller makes, which shows they grant no more.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadAll, load } from 'js-yaml';
import { CONTROLLER, controllerOptions } from '../../src/cli/controller.js';
import { parseCommand } from '../../src/cli/commands.js';
import { Kube } from '../../src/kube/client.js';
import { startController } from '../../src/controller/run.js';
import { dumpYaml } from '../../src/yaml/dump.js';
import { startControlPlane } from '../support/controlplane.js';
import { capturedLog } from '../support/logs.js';
import { CapiFixtures, get, installCapiCrds, managementSkip } from '../support/management.js';

const dir = new URL('../../deploy/cluster-api/', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, dir), 'utf8');
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } } & Record<string, unknown>;

/**
 * clusterctl's variable substitution (drone/envsubst, as `clusterctl init` applies it):
 * `${VAR}` from `env`, `${VAR:=default}` falling back to the default; an unset variable
 * without a default is an error naming it.
 */
function substitute(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::=([^}]*))?\}/g, (_m, name: string, fallback: string | undefined) => {
    const value = env[name] ?? fallback;
    if (value === undefined) throw new Error(`variable ${name} is not set and has no default`);
    return value;
  });
}

const components = (env: Record<string, string> = {}) => (loadAll(substitute(read('bootstrap-components.yaml'), env)) as Obj[]).filter(Boolean);
const deployment = (objects: Obj[]) => objects.find((o) => o.kind === 'Deployment') as Obj & { spec: { template: { spec: { serviceAccountName: string; containers: { name: string; image: string; args: string[]; livenessProbe: { httpGet: { path: string } }; readinessProbe: { httpGet: { path: string } }; ports: { containerPort: number }[] }[] } } } };

describe('clusterctl release assets', () => {
  it("metadata.yaml names this release's series with contract v1beta2", () => {
    const meta = load(read('metadata.yaml')) as { apiVersion: string; kind: string; releaseSeries: { major: number; minor: number; contract: string }[] };
    assert.equal(meta.apiVersion, 'clusterctl.cluster.x-k8s.io/v1alpha3');
    assert.equal(meta.kind, 'Metadata');
    const [major, minor] = pkg.version.split('.').map(Number);
    assert.deepEqual(
      meta.releaseSeries.find((s) => s.major === major && s.minor === minor),
      { major, minor, contract: 'v1beta2' },
      `a release series for ${pkg.version}`,
    );
    for (const s of meta.releaseSeries) assert.deepEqual(Object.keys(s).sort(), ['contract', 'major', 'minor']);
  });

  it('bootstrap-components.yaml: one Namespace, every object labelled, container manager, no CRDs, every variable defaulted', () => {
    const objects = components();
    assert.deepEqual(
      objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name),
      ['bootwright-system'],
    );
    assert.equal(objects.filter((o) => o.kind === 'CustomResourceDefinition').length, 0);
    for (const o of objects) assert.equal(o.metadata.labels?.['cluster.x-k8s.io/provider'], 'bootstrap-bootwright', `${o.kind} ${o.metadata.name}`);
    for (const o of objects) if (o.kind !== 'Namespace' && !o.kind.startsWith('Cluster')) assert.equal(o.metadata.namespace, 'bootwright-system', `${o.kind} ${o.metadata.name}`);
    const [container, ...others] = deployment(objects).spec.template.spec.containers;
    assert.equal(others.length, 0);
    assert.equal(container!.name, 'manager');
    assert.equal(container!.image, 'bootwright:0.2.0');
    assert.equal(components({ BOOTWRIGHT_IMAGE: 'registry.example/bootwright:v0.2.0' }).length, objects.length);
    assert.equal(deployment(components({ BOOTWRIGHT_IMAGE: 'registry.example/bootwright:v0.2.0' })).spec.template.spec.containers[0]!.image, 'registry.example/bootwright:v0.2.0');
    assert.equal(container!.livenessProbe.httpGet.path, '/healthz');
    assert.equal(container!.readinessProbe.httpGet.path, '/readyz');
  });

  it("the Deployment's arguments are flags bootwright controller takes, with clusterctl's defaults and with variables set", () => {
    const args = deployment(components()).spec.template.spec.containers[0]!.args;
    assert.equal(args[0], 'controller');
    const o = controllerOptions(parseCommand(CONTROLLER, args.slice(1)));
    assert.equal(o.watchFilter, undefined, 'an empty --watch-filter is no filter');
    assert.equal(o.namespace, undefined);
    assert.equal(o.tokenTtlMs, 15 * 60_000);
    assert.equal(o.ignitionVersion, '2.3');
    assert.deepEqual(o.health, { host: '0.0.0.0', port: 9440 });
    assert.equal(deployment(components()).spec.template.spec.containers[0]!.ports[0]!.containerPort, o.health.port);
    assert.ok(o.leaderElection);
    const set = controllerOptions(
      parseCommand(CONTROLLER, deployment(components({ BOOTWRIGHT_WATCH_FILTER: 'bootwright', BOOTWRIGHT_IGNITION_VERSION: '3', BOOTWRIGHT_BOOTSTRAP_TOKEN_TTL: '30m' })).spec.template.spec.containers[0]!.args.slice(1)),
    );
    assert.equal(set.watchFilter, 'bootwright');
    assert.equal(set.ignitionVersion, '3');
    assert.equal(set.tokenTtlMs, 30 * 60_000);
  });

  it('the RBAC rules are exactly the calls the controller makes (no wildcard, no Secret list, watch or delete)', () => {
    const objects = components();
    const rules = (kind: string) => (objects.find((o) => o.kind === kind) as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] }).rules;
    const flat = (r: ReturnType<typeof rules>) => r.flatMap((x) => x.apiGroups.flatMap((g) => x.resources.flatMap((res) => x.verbs.map((v) => `${g || 'core'}/${res}:${v}`)))).sort();
    assert.deepEqual(flat(rules('ClusterRole')), [
      'bootstrap.cluster.x-k8s.io/kubeadmconfigs/status:patch',
      'bootstrap.cluster.x-k8s.io/kubeadmconfigs:get',
      'bootstrap.cluster.x-k8s.io/kubeadmconfigs:list',
      'bootstrap.cluster.x-k8s.io/kubeadmconfigs:patch',
      'bootstrap.cluster.x-k8s.io/kubeadmconfigs:watch',
      'cluster.x-k8s.io/clusters:get',
      'cluster.x-k8s.io/clusters:list',
      'cluster.x-k8s.io/clusters:watch',
      'cluster.x-k8s.io/machinepools:get',
      'cluster.x-k8s.io/machinepools:list',
      'cluster.x-k8s.io/machinepools:watch',
      'cluster.x-k8s.io/machines:get',
      'cluster.x-k8s.io/machines:list',
      'cluster.x-k8s.io/machines:watch',
      'core/configmaps:create',
      'core/configmaps:delete',
      'core/configmaps:get',
      'core/events:create',
      'core/secrets:create',
      'core/secrets:get',
      'core/secrets:patch',
      'core/secrets:update',
    ]);
    assert.deepEqual(flat(rules('Role')), ['coordination.k8s.io/leases:create', 'coordination.k8s.io/leases:get', 'coordination.k8s.io/leases:update']);
  });
});

const skip = managementSkip('bootstrap-components.yaml on an API server');

/** The REST collection of a component object. */
function collection(o: Obj): string {
  const plural: Record<string, string> = { Namespace: 'namespaces', ServiceAccount: 'serviceaccounts', ClusterRole: 'clusterroles', ClusterRoleBinding: 'clusterrolebindings', Role: 'roles', RoleBinding: 'rolebindings', Deployment: 'deployments' };
  const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
  const ns = o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : '';
  return `${base}${ns}/${plural[o.kind]!}`;
}

describe('bootstrap-components.yaml on a real API server', { skip, timeout: 240_000 }, () => {
  it("the controller runs with only the components' RBAC: leads, initialises, joins, nothing refused", async () => {
    const cp = await startControlPlane();
    const { log, lines: logLines } = capturedLog();
    let running: Awaited<ReturnType<typeof startController>> | undefined;
    try {
      await installCapiCrds(cp);
      const objects = components();
      for (const o of objects) {
        const res = await cp.request('POST', `${collection(o)}?fieldValidation=Strict`, o);
        assert.equal(res.status, 201, `${o.kind} ${o.metadata.name}: ${JSON.stringify(res.body).slice(0, 400)}`);
      }
      const sa = deployment(objects).spec.template.spec.serviceAccountName;
      const tokenRequest = await cp.request('POST', `/api/v1/namespaces/bootwright-system/serviceaccounts/${sa}/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } });
      assert.equal(tokenRequest.status, 201);
      const token = (tokenRequest.body as { status: { token: string } }).status.token;
      const kubeconfig = dumpYaml({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'management', cluster: { server: cp.url, 'certificate-authority-data': Buffer.from(cp.serverCa).toString('base64') } }],
        users: [{ name: sa, user: { token } }],
        contexts: [{ name: 'bootwright', context: { cluster: 'management', user: sa } }],
        'current-context': 'bootwright',
      });
      const options = controllerOptions(parseCommand(CONTROLLER, deployment(objects).spec.template.spec.containers[0]!.args.slice(1)));
      running = await startController(Kube.fromKubeconfig(kubeconfig), { ...options, health: { host: '127.0.0.1', port: 0 }, leaderElection: { ...options.leaderElection!, namespace: 'bootwright-system' } }, log);

      // This API server is the workload cluster too: its kubeconfig Secret is the admin's.
      const fixtures = new CapiFixtures(cp, cp);
      await fixtures.cluster('rbac');
      await fixtures.clusterStatus('rbac', { initialization: { infrastructureProvisioned: true } });
      await fixtures.machine('rbac', 'rbac-cp-a', 'control-plane');
      await fixtures.machine('rbac', 'rbac-md-0-a', 'worker');
      const secret = async (name: string, what: string) => {
        const deadline = Date.now() + 60_000;
        while (!(await get(cp, 'v1', 'secrets', 'default', name))) {
          if (Date.now() > deadline) assert.fail(`no ${what} within 60 s:\n${logLines.join('')}`);
          await sleep(100);
        }
      };
      await secret('rbac-cp-a', 'init data Secret');
      await fixtures.clusterStatus('rbac', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
      await secret('rbac-md-0-a', 'worker join data Secret');
      assert.ok(running.isLeader());
      const lease = (await get(cp, 'coordination.k8s.io/v1', 'leases', 'bootwright-system', 'bootwright-controller-leader-election')) as { spec: { holderIdentity: string } } | undefined;
      assert.equal(lease?.spec.holderIdentity, options.identity);
      const refused = logLines.filter((l) => /\b403\b|Forbidden/.test(l));
      assert.deepEqual(refused, [], 'no call refused by RBAC');
    } finally {
      await running?.stop();
      await cp.stop();
    }
  });
});
