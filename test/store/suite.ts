/**
 * The shared Store test suite (DESIGN §6): every Store implementation must pass it.
 *
 * `makeStore` gives a new, empty store for each test; `reopen` closes nothing itself:
 * it is handed a store the suite has closed and must open the same data again (a
 * restart of the service).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AlreadyExistsError, DiscoveredNotFoundError, DuplicateSelectorError, InvalidArgumentError, MissingReferenceError, NotFoundError, PreconditionFailedError, ReferencedError } from '../../src/store/errors.js';
import type { ClusterSpec, MachineSpec, ProfileSpec } from '../../src/store/resources.js';
import { selects } from '../../src/store/selector.js';
import type { BootCandidates, Store } from '../../src/store/store.js';

const TOKEN = 'abcdef.0123456789abcdef';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const cluster = (name = 'prod', extra: Partial<ClusterSpec> = {}): ClusterSpec => ({ name, controlPlaneEndpoint: `api.${name}.example.com:6443`, bootstrapToken: TOKEN, ...extra });
const profile = (extra: Partial<ProfileSpec> = {}): ProfileSpec => ({ role: 'worker', kubernetesVersion: 'v1.33.2', ...extra });
const machine = (extra: Partial<MachineSpec> = {}, selectors: Partial<MachineSpec['selectors']> = {}): MachineSpec => ({
  selectors: { mac: [], labels: {}, ...selectors },
  cluster: 'prod',
  profile: 'worker',
  nodeLabels: {},
  taints: [],
  ...extra,
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A store with cluster `prod` and profile `worker`, ready for machines. */
async function withBase(makeStore: () => Promise<Store>): Promise<Store> {
  const store = await makeStore();
  await store.create('Cluster', { name: 'prod', spec: cluster() });
  await store.create('Profile', { name: 'worker', spec: profile() });
  return store;
}

/** Run `body` against a fresh store and close it afterwards. */
function using(makeStore: () => Promise<Store>, body: (store: Store) => Promise<void>, base = false): () => Promise<void> {
  return async () => {
    const store = base ? await withBase(makeStore) : await makeStore();
    try {
      await body(store);
    } finally {
      await store.close();
    }
  };
}

/**
 * Register the suite.
 *
 * @param name the implementation's name, for test titles.
 * @param makeStore a new, empty store per call.
 * @param reopen the same data as a closed store, opened again.
 */
export function storeSuite(name: string, makeStore: () => Promise<Store>, reopen: (closed: Store) => Promise<Store>): void {
  describe(`Store: ${name}`, () => {
    describe('create, get, revisions', () => {
      it('creates at revision 1 with labels and ISO UTC timestamps', using(makeStore, async (store) => {
        const created = await store.create('Cluster', { name: 'prod', labels: { env: 'prod', team: 'infra' }, spec: cluster() });
        assert.equal(created.kind, 'Cluster');
        assert.equal(created.name, 'prod');
        assert.equal(created.revision, 1);
        assert.deepEqual(created.labels, { env: 'prod', team: 'infra' });
        assert.deepEqual(created.spec, cluster());
        assert.match(created.createdAt, ISO);
        assert.equal(created.updatedAt, created.createdAt);
        assert.equal(created.refs, undefined);
        assert.deepEqual(await store.get('Cluster', 'prod'), created);
      }));

      it('refuses a second create of the same name, but the same name of another kind is fine', using(makeStore, async (store) => {
        await store.create('Cluster', { name: 'prod', spec: cluster() });
        await assert.rejects(store.create('Cluster', { name: 'prod', spec: cluster('other') }), (e) => e instanceof AlreadyExistsError && e.kind === 'Cluster' && e.resourceName === 'prod');
        assert.equal((await store.get('Cluster', 'prod')).spec.name, 'prod');
        assert.equal((await store.create('Profile', { name: 'prod', spec: profile() })).revision, 1);
      }));

      it('get and getRevision of what does not exist are NotFoundError', using(makeStore, async (store) => {
        await assert.rejects(store.get('Machine', 'nope'), (e) => e instanceof NotFoundError && e.kind === 'Machine' && e.resourceName === 'nope');
        await store.create('Profile', { name: 'worker', spec: profile() });
        await assert.rejects(store.getRevision('Profile', 'worker', 2), (e) => e instanceof NotFoundError && e.revision === 2);
        await assert.rejects(store.revisions('Profile', 'nope'), NotFoundError);
      }));

      it('each replace raises the revision by one; history is oldest first and readable', using(makeStore, async (store) => {
        const first = await store.create('Profile', { name: 'worker', labels: { v: '1' }, spec: profile() });
        await sleep(3);
        const second = await store.replace('Profile', { name: 'worker', labels: { v: '2' }, spec: profile({ kubernetesVersion: 'v1.34.0' }) });
        const third = await store.replace('Profile', { name: 'worker', spec: profile({ role: 'control-plane' }) });
        assert.deepEqual([first.revision, second.revision, third.revision], [1, 2, 3]);
        assert.equal(third.createdAt, first.createdAt, 'createdAt stays');
        assert.ok(second.updatedAt > first.updatedAt, 'updatedAt moves');
        assert.deepEqual(third.labels, {});
        const history = await store.revisions('Profile', 'worker');
        assert.deepEqual(
          history.map((r) => [r.revision, r.spec.role, r.spec.kubernetesVersion, r.labels]),
          [
            [1, 'worker', 'v1.33.2', { v: '1' }],
            [2, 'worker', 'v1.34.0', { v: '2' }],
            [3, 'control-plane', 'v1.33.2', {}],
          ],
        );
        assert.deepEqual(await store.getRevision('Profile', 'worker', 2), second);
        assert.deepEqual(await store.get('Profile', 'worker'), third);
      }));

      it('replace of a missing resource is NotFoundError', using(makeStore, async (store) => {
        await assert.rejects(store.replace('Cluster', { name: 'prod', spec: cluster() }), NotFoundError);
      }));
    });

    describe('dry runs', () => {
      it('a dry-run create, replace and delete answer what they would store and keep nothing', using(makeStore, async (store) => {
        const would = await store.create('Cluster', { name: 'prod', labels: { env: 'prod' }, spec: cluster() }, { dryRun: true });
        assert.equal(would.revision, 1);
        assert.deepEqual(would.labels, { env: 'prod' });
        assert.deepEqual(would.spec, cluster());
        await assert.rejects(store.get('Cluster', 'prod'), NotFoundError);
        await assert.rejects(store.revisions('Cluster', 'prod'), NotFoundError);
        const created = await store.create('Cluster', { name: 'prod', spec: cluster() });
        const replaced = await store.replace('Cluster', { name: 'prod', labels: { v: '2' }, spec: cluster() }, { dryRun: true, ifMatch: 1 });
        assert.equal(replaced.revision, 2);
        assert.deepEqual(replaced.labels, { v: '2' });
        assert.equal(replaced.createdAt, created.createdAt);
        await store.delete('Cluster', 'prod', { dryRun: true });
        assert.deepEqual(await store.get('Cluster', 'prod'), created);
        assert.equal((await store.revisions('Cluster', 'prod')).length, 1);
        // A name deleted before: the dry run numbers on after its history, as the write would.
        await store.delete('Cluster', 'prod');
        assert.equal((await store.create('Cluster', { name: 'prod', spec: cluster() }, { dryRun: true })).revision, 2);
      }));

      it('a dry run makes every check the write makes: existence, If-Match, references, selectors, machines still naming', using(makeStore, async (store) => {
        await store.create('Machine', { name: 'n1', spec: machine({}, { mac: ['52:54:00:00:00:01'] }) });
        await assert.rejects(store.create('Cluster', { name: 'prod', spec: cluster() }, { dryRun: true }), AlreadyExistsError);
        await assert.rejects(store.replace('Cluster', { name: 'prod', spec: cluster() }, { dryRun: true, ifMatch: 7 }), PreconditionFailedError);
        await assert.rejects(store.replace('Cluster', { name: 'nope', spec: cluster() }, { dryRun: true }), NotFoundError);
        await assert.rejects(store.create('Machine', { name: 'n2', spec: machine({ cluster: 'nowhere' }) }, { dryRun: true }), MissingReferenceError);
        await assert.rejects(store.create('Machine', { name: 'n2', spec: machine({}, { mac: ['52-54-00-00-00-01'] }) }, { dryRun: true }), (e) => e instanceof DuplicateSelectorError && e.machine === 'n1');
        await assert.rejects(store.delete('Cluster', 'prod', { dryRun: true }), ReferencedError);
        // The dry-run machine took no selector: a real one may have it.
        const m = await store.create('Machine', { name: 'n3', spec: machine({}, { mac: ['52:54:00:00:00:03'] }) }, { dryRun: true });
        assert.deepEqual(m.refs, { clusterRevision: 1, profileRevision: 1 });
        assert.equal((await store.create('Machine', { name: 'n4', spec: machine({}, { mac: ['52:54:00:00:00:03'] }) })).revision, 1);
        await assert.rejects(store.get('Machine', 'n3'), NotFoundError);
      }, true));
    });

    describe('If-Match', () => {
      it('a stale ifMatch fails replace and delete with the current revision; the right one succeeds', using(makeStore, async (store) => {
        await store.create('Cluster', { name: 'prod', spec: cluster() });
        await store.replace('Cluster', { name: 'prod', spec: cluster() }, { ifMatch: 1 });
        await assert.rejects(store.replace('Cluster', { name: 'prod', spec: cluster() }, { ifMatch: 1 }), (e) => e instanceof PreconditionFailedError && e.expected === 1 && e.actual === 2);
        await assert.rejects(store.delete('Cluster', 'prod', { ifMatch: 1 }), (e) => e instanceof PreconditionFailedError && e.actual === 2);
        assert.equal((await store.get('Cluster', 'prod')).revision, 2);
        assert.equal((await store.replace('Cluster', { name: 'prod', spec: cluster() }, { ifMatch: 2 })).revision, 3);
        await store.delete('Cluster', 'prod', { ifMatch: 3 });
        await assert.rejects(store.get('Cluster', 'prod'), NotFoundError);
      }));

      it('concurrent replaces with the same ifMatch: exactly one succeeds', using(makeStore, async (store) => {
        await store.create('Cluster', { name: 'prod', spec: cluster() });
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => store.replace('Cluster', { name: 'prod', labels: { writer: String(i) }, spec: cluster() }, { ifMatch: 1 })),
        );
        const won = results.filter((r) => r.status === 'fulfilled');
        const lost = results.filter((r) => r.status === 'rejected');
        assert.equal(won.length, 1);
        assert.equal(lost.length, 19);
        for (const r of lost) assert.ok(r.reason instanceof PreconditionFailedError);
        const current = await store.get('Cluster', 'prod');
        assert.equal(current.revision, 2);
        assert.deepEqual(current.labels, won[0]!.value.labels);
        assert.equal((await store.revisions('Cluster', 'prod')).length, 2);
      }));
    });

    describe('delete', () => {
      it('keeps history; a name created again continues after its last revision', using(makeStore, async (store) => {
        await store.create('Cluster', { name: 'prod', spec: cluster() });
        await store.replace('Cluster', { name: 'prod', spec: cluster('prod', { certificateKey: 'a'.repeat(64) }) });
        await store.delete('Cluster', 'prod');
        await assert.rejects(store.get('Cluster', 'prod'), NotFoundError);
        await assert.rejects(store.delete('Cluster', 'prod'), NotFoundError);
        assert.deepEqual((await store.list('Cluster')).items, []);
        assert.deepEqual((await store.revisions('Cluster', 'prod')).map((r) => r.revision), [1, 2]);
        assert.equal((await store.getRevision('Cluster', 'prod', 2)).spec.certificateKey, 'a'.repeat(64));
        const again = await store.create('Cluster', { name: 'prod', spec: cluster() });
        assert.equal(again.revision, 3);
        await assert.rejects(store.replace('Cluster', { name: 'prod', spec: cluster() }, { ifMatch: 1 }), PreconditionFailedError);
        assert.deepEqual((await store.revisions('Cluster', 'prod')).map((r) => r.revision), [1, 2, 3]);
      }));
    });

    describe('machines: references', () => {
      it('records the cluster and profile revisions current at each write', using(makeStore, async (store) => {
        const m1 = await store.create('Machine', { name: 'node-1', spec: machine() });
        assert.deepEqual(m1.refs, { clusterRevision: 1, profileRevision: 1 });
        await store.replace('Cluster', { name: 'prod', spec: cluster('prod', { controlPlaneEndpoint: 'api2.prod.example.com:6443' }) });
        await store.replace('Cluster', { name: 'prod', spec: cluster() });
        assert.deepEqual((await store.get('Machine', 'node-1')).refs, { clusterRevision: 1, profileRevision: 1 }, 'a cluster change does not move the machine');
        const m2 = await store.replace('Machine', { name: 'node-1', spec: machine({ nodeName: 'n1' }) });
        assert.deepEqual(m2.refs, { clusterRevision: 3, profileRevision: 1 });
        assert.deepEqual((await store.getRevision('Machine', 'node-1', 1)).refs, { clusterRevision: 1, profileRevision: 1 });
        assert.deepEqual((await store.revisions('Machine', 'node-1')).map((r) => r.refs), [
          { clusterRevision: 1, profileRevision: 1 },
          { clusterRevision: 3, profileRevision: 1 },
        ]);
      }, true));

      it('a machine naming a missing cluster or profile is MissingReferenceError naming each field', using(makeStore, async (store) => {
        await assert.rejects(store.create('Machine', { name: 'node-1', spec: machine({ cluster: 'nope', profile: 'gone' }) }), (e) => {
          assert.ok(e instanceof MissingReferenceError);
          assert.deepEqual(e.missing, [
            { path: 'spec.cluster', kind: 'Cluster', name: 'nope' },
            { path: 'spec.profile', kind: 'Profile', name: 'gone' },
          ]);
          return true;
        });
        await assert.rejects(store.get('Machine', 'node-1'), NotFoundError, 'nothing was written');
        await store.create('Machine', { name: 'node-1', spec: machine() });
        await assert.rejects(store.replace('Machine', { name: 'node-1', spec: machine({ profile: 'gone' }) }), (e) => e instanceof MissingReferenceError && e.missing.length === 1 && e.missing[0]!.path === 'spec.profile');
        assert.equal((await store.get('Machine', 'node-1')).revision, 1);
      }, true));

      it('referencedBy lists the machines; deleting a used cluster or profile is ReferencedError', using(makeStore, async (store) => {
        await store.create('Cluster', { name: 'staging', spec: cluster('staging') });
        for (const n of ['node-b', 'node-a', 'node-c']) await store.create('Machine', { name: n, spec: machine() });
        assert.deepEqual(await store.referencedBy('Cluster', 'prod'), ['node-a', 'node-b', 'node-c']);
        assert.deepEqual(await store.referencedBy('Profile', 'worker'), ['node-a', 'node-b', 'node-c']);
        assert.deepEqual(await store.referencedBy('Cluster', 'staging'), []);
        await assert.rejects(store.delete('Cluster', 'prod'), (e) => e instanceof ReferencedError && e.kind === 'Cluster' && e.machines.join() === 'node-a,node-b,node-c');
        await assert.rejects(store.delete('Profile', 'worker'), (e) => e instanceof ReferencedError && e.machines.length === 3);
        await store.replace('Machine', { name: 'node-a', spec: machine({ cluster: 'staging' }) });
        await store.delete('Machine', 'node-b');
        assert.deepEqual(await store.referencedBy('Cluster', 'prod'), ['node-c']);
        assert.deepEqual(await store.referencedBy('Cluster', 'staging'), ['node-a']);
        await store.replace('Machine', { name: 'node-c', spec: machine({ cluster: 'staging' }) });
        await store.delete('Cluster', 'prod');
        await assert.rejects(store.get('Cluster', 'prod'), NotFoundError);
      }, true));
    });

    describe('list', () => {
      it('pages by name: stable, complete, no duplicates', using(makeStore, async (store) => {
        const names = Array.from({ length: 25 }, (_, i) => `c-${String(i).padStart(2, '0')}`);
        for (const n of [...names].reverse()) await store.create('Cluster', { name: n, spec: cluster(n) });
        const seen: string[] = [];
        let token: string | undefined;
        const sizes: number[] = [];
        do {
          const page = await store.list('Cluster', { limit: 10, ...(token ? { continue: token } : {}) });
          sizes.push(page.items.length);
          seen.push(...page.items.map((r) => r.name));
          token = page.continue;
          if (seen.length === 10) {
            // Writes between pages: a name before the cursor is not seen, one after it is.
            await store.create('Cluster', { name: 'c-00a', spec: cluster('c-00a') });
            await store.create('Cluster', { name: 'c-99', spec: cluster('c-99') });
          }
        } while (token);
        assert.deepEqual(sizes, [10, 10, 6]);
        assert.deepEqual(seen, [...names, 'c-99']);
        const all = await store.list('Cluster', { limit: 1000 });
        assert.equal(all.items.length, 27);
        assert.equal(all.continue, undefined);
        assert.equal((await store.list('Cluster')).items.length, 27, 'default limit');
        const exact = await store.list('Cluster', { limit: 27 });
        assert.equal(exact.continue, undefined, 'no token when the page ends the list');
      }));

      it('refuses a bad limit or continue token', using(makeStore, async (store) => {
        for (const limit of [0, -1, 1.5, 1001]) await assert.rejects(store.list('Cluster', { limit }), (e) => e instanceof InvalidArgumentError && e.field === 'limit');
        for (const token of ['garbage', Buffer.from('{"v":2}').toString('base64url')]) {
          await assert.rejects(store.list('Cluster', { continue: token }), (e) => e instanceof InvalidArgumentError && e.field === 'continue');
        }
        for (const n of ['a', 'b']) await store.create('Profile', { name: n, spec: profile() });
        const page = await store.list('Profile', { limit: 1 });
        assert.ok(page.continue);
        await assert.rejects(store.list('Cluster', { continue: page.continue }), InvalidArgumentError, 'a token is for one kind');
        assert.deepEqual((await store.list('Profile', { continue: page.continue })).items.map((r) => r.name), ['b']);
      }));

      it('filters by labels (every term must match), across pages, following replaces and deletes', using(makeStore, async (store) => {
        const labelsOf = (i: number) => ({ env: i % 2 === 0 ? 'prod' : 'dev', tier: i % 3 === 0 ? 'front' : 'back', 'example.com/rack': `r${i % 4}` });
        for (let i = 0; i < 12; i++) await store.create('Profile', { name: `p-${String(i).padStart(2, '0')}`, labels: labelsOf(i), spec: profile() });
        const names = async (labelSelector: Record<string, string>, limit = 100) => {
          const out: string[] = [];
          let token: string | undefined;
          do {
            const page = await store.list('Profile', { labelSelector, limit, ...(token ? { continue: token } : {}) });
            out.push(...page.items.map((r) => r.name));
            token = page.continue;
          } while (token);
          return out;
        };
        assert.deepEqual(await names({ env: 'prod' }), ['p-00', 'p-02', 'p-04', 'p-06', 'p-08', 'p-10']);
        assert.deepEqual(await names({ env: 'prod' }, 4), ['p-00', 'p-02', 'p-04', 'p-06', 'p-08', 'p-10']);
        assert.deepEqual(await names({ env: 'prod', tier: 'front' }), ['p-00', 'p-06']);
        assert.deepEqual(await names({ 'example.com/rack': 'r1' }), ['p-01', 'p-05', 'p-09']);
        assert.deepEqual(await names({ env: 'staging' }), []);
        assert.deepEqual(await names({ env: 'prod', missing: 'x' }), []);
        assert.equal((await names({})).length, 12);
        await store.replace('Profile', { name: 'p-00', labels: { env: 'dev' }, spec: profile() });
        await store.delete('Profile', 'p-06');
        assert.deepEqual(await names({ env: 'prod', tier: 'front' }), []);
        assert.deepEqual(await names({ env: 'dev', tier: 'front' }), ['p-03', 'p-09']);
        assert.ok((await names({ env: 'dev' })).includes('p-00'));
      }));

      it('set-based requirements select exactly what selects() says, on random labels and selectors', using(makeStore, async (store) => {
        const keys = ['env', 'tier', 'example.com/rack'];
        const values = ['a', 'b', 'c'];
        const rng = (() => {
          let x = 0x2545f491;
          return () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 8) / 0x1000000;
        })();
        const pick = <T,>(xs: T[]) => xs[Math.floor(rng() * xs.length)]!;
        const labelsOf: Record<string, Record<string, string>> = {};
        for (let i = 0; i < 20; i++) {
          const labels: Record<string, string> = {};
          for (const k of keys) if (rng() < 0.6) labels[k] = pick(values);
          labelsOf[`q-${String(i).padStart(2, '0')}`] = labels;
          await store.create('Profile', { name: `q-${String(i).padStart(2, '0')}`, labels, spec: profile() });
        }
        const operators = ['in', 'notin', 'exists', '!'] as const;
        for (let round = 0; round < 60; round++) {
          const requirements = Array.from({ length: 1 + Math.floor(rng() * 3) }, () => {
            const operator = pick([...operators]);
            return { key: pick(keys), operator, values: operator === 'in' || operator === 'notin' ? [...new Set([pick(values), pick(values)])].sort() : [] };
          });
          const got = (await store.list('Profile', { labelSelector: requirements })).items.map((r) => r.name);
          const want = Object.keys(labelsOf).filter((n) => selects(requirements, labelsOf[n]!));
          assert.deepEqual(got, want, JSON.stringify(requirements));
        }
      }));

      it('lists only the kind asked for', using(makeStore, async (store) => {
        await store.create('Machine', { name: 'node-1', spec: machine() });
        assert.deepEqual((await store.list('Machine')).items.map((r) => [r.name, r.refs]), [['node-1', { clusterRevision: 1, profileRevision: 1 }]]);
        assert.deepEqual((await store.list('Cluster')).items.map((r) => r.name), ['prod']);
      }, true));
    });

    describe('audit', () => {
      it('reads back a machine’s rows newest first, with a limit', using(makeStore, async (store) => {
        for (let i = 0; i < 5; i++) await store.recordAudit({ machine: 'node-1', route: `/r${i}`, client: '10.0.0.1', status: 200 + i, at: `2030-01-01T00:00:0${i}.000Z` });
        await store.recordAudit({ machine: 'node-2', route: '/ignition', client: '::1', status: 403 });
        const rows = await store.audit('node-1');
        assert.deepEqual(
          rows.map((r) => [r.route, r.status, r.client, r.at, r.machine]),
          [4, 3, 2, 1, 0].map((i) => [`/r${i}`, 200 + i, '10.0.0.1', `2030-01-01T00:00:0${i}.000Z`, 'node-1']),
        );
        for (let i = 1; i < rows.length; i++) assert.ok(rows[i - 1]!.id > rows[i]!.id);
        assert.deepEqual((await store.audit('node-1', { limit: 2 })).map((r) => r.route), ['/r4', '/r3']);
        const other = await store.audit('node-2');
        assert.equal(other.length, 1);
        assert.equal(other[0]!.status, 403);
        assert.match(other[0]!.at, ISO);
        assert.deepEqual(await store.audit('node-3'), []);
        await assert.rejects(store.audit('node-1', { limit: 0 }), InvalidArgumentError);
      }));

      it('keeps at most maxServedPerMachine served rows of a machine, its newest: other machines\' rows and its refusals stay', using(makeStore, async (store) => {
        // An attacker pass had /ipxe served 1,000 times for a known MAC: 1,000 rows, unbounded.
        await store.recordAudit({ machine: 'node-2', route: '/ipxe', client: '10.0.0.2', status: 200 }, { maxServedPerMachine: 3 });
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 403 }, { maxRefused: 10 });
        for (let i = 0; i < 5; i++) await store.recordAudit({ machine: 'node-1', route: '/ipxe', client: `10.0.0.${i}`, status: 200 }, { maxServedPerMachine: 3 }, { kind: 'booting' });
        assert.deepEqual((await store.audit('node-1')).map((r) => `${r.status} ${r.client}`), ['200 10.0.0.4', '200 10.0.0.3', '200 10.0.0.2', '403 10.0.0.1']);
        assert.equal((await store.audit('node-2')).length, 1);
        // Without the bound (a caller that sets none), nothing is deleted.
        await store.recordAudit({ machine: 'node-1', route: '/report', client: '10.0.0.9', status: 204 });
        assert.equal((await store.audit('node-1')).length, 5);
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.phase, 'Booting', 'the lifecycle event applied alongside');
      }));

      it('holds the served bound exactly per class over many writes, with or without an event, and after the store is opened again', async () => {
        let store = await makeStore();
        try {
          const bound = { maxServedPerMachine: 4 };
          const served = (route: string, i: number, event?: { kind: 'booting' }) => store.recordAudit({ machine: 'node-1', route, client: `10.0.${route.length}.${i}`, status: 200 }, bound, event);
          for (let i = 0; i < 12; i++) {
            await served('/ipxe', i, { kind: 'booting' });
            if (i % 3 !== 2) await served('/report', i);
          }
          const rows = (store: Store) => store.audit('node-1').then((r) => r.map((a) => `${a.route} ${a.client}`));
          const expected = ['/ipxe 10.0.5.11', '/report 10.0.7.10', '/ipxe 10.0.5.10', '/report 10.0.7.9', '/ipxe 10.0.5.9', '/ipxe 10.0.5.8', '/report 10.0.7.7', '/report 10.0.7.6'];
          assert.deepEqual(await rows(store), expected);
          await store.close();
          store = await reopen(store);
          await served('/report', 12);
          assert.deepEqual(await rows(store), ['/report 10.0.7.12', ...expected.filter((r) => r !== '/report 10.0.7.6')], 'the numbers go on where they stopped');
        } finally {
          await store.close();
        }
      });

      it('lands every one of concurrent served writes of one machine, and keeps the bound', using(makeStore, async (store) => {
        // An /ipxe flood for one known MAC, many at once: each is acknowledged only with its row.
        const results = await Promise.all(
          Array.from({ length: 40 }, (_v, i) => store.recordAudit({ machine: 'node-1', route: i % 2 ? '/ipxe' : '/ignition', client: `10.0.1.${i}`, status: 200 }, { maxServedPerMachine: 5 }, { kind: 'booting' })),
        );
        assert.deepEqual(results, results.map(() => true));
        const rows = await store.audit('node-1');
        assert.deepEqual([rows.filter((r) => r.route === '/ipxe').length, rows.filter((r) => r.route === '/ignition').length], [5, 5]);
      }));

      it('keeps at most maxRefused refusal rows, oldest deleted first, and never deletes a served fetch\'s row', using(makeStore, async (store) => {
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 200 });
        for (let i = 0; i < 6; i++) await store.recordAudit({ machine: `m${i}`, route: '/ignition', client: '10.0.0.9', status: 403 }, { maxRefused: 3 });
        await store.recordAudit({ machine: 'node-1', route: '/ipxe', client: '10.0.0.1', status: 304 }, { maxRefused: 3 });
        for (let i = 0; i < 6; i++) assert.equal((await store.audit(`m${i}`)).length, i < 3 ? 0 : 1, `m${i}`);
        assert.deepEqual((await store.audit('node-1')).map((r) => r.status), [304, 200]);
        // Refusals of a real machine are pruned like any other; its served rows stay.
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 403 }, { maxRefused: 1 });
        assert.deepEqual((await store.audit('node-1')).map((r) => r.status), [403, 304, 200]);
        assert.equal((await store.audit('m5')).length, 0);
      }));

      it('deletes refusal rows older than the retention, never a served fetch\'s row', using(makeStore, async (store) => {
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 200, at: '2001-01-01T00:00:00.000Z' });
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 403, at: '2001-01-01T00:00:01.000Z' });
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 404 }, { retentionSeconds: 86400 });
        assert.deepEqual((await store.audit('node-1')).map((r) => r.status), [404, 200]);
        // Expired rows leave the count too: two caps' worth of old rows, then two new ones, all kept.
        for (let i = 0; i < 4; i++) await store.recordAudit({ machine: 'node-2', route: '/ignition', client: '10.0.0.1', status: 403, at: `2001-01-02T00:00:0${i}.000Z` });
        for (let i = 0; i < 2; i++) await store.recordAudit({ machine: 'node-3', route: '/ignition', client: '10.0.0.1', status: 403 }, { retentionSeconds: 86400, maxRefused: 3 });
        assert.deepEqual(await store.audit('node-2'), []);
        assert.deepEqual((await store.audit('node-1')).map((r) => r.status), [404, 200]);
        assert.equal((await store.audit('node-3')).length, 2);
      }));
    });

    describe('audit details', () => {
      it('keeps the user agent (cut to its limit), refusal reason, what was served and a report outcome; leaves absent ones out', using(makeStore, async (store) => {
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 200, userAgent: `Ignition/2.20.0${'x'.repeat(400)}`, revision: 3, sha256: 'ab'.repeat(32), format: 'ignition', ignitionVersion: '3.4.0' });
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 403, reason: 'the signed URL has expired' });
        await store.recordAudit({ machine: 'node-1', route: '/report', client: '10.0.0.1', status: 204, outcome: 'failure' });
        const [report, refusal, served] = await store.audit('node-1');
        assert.equal(report!.outcome, 'failure');
        assert.equal(refusal!.reason, 'the signed URL has expired');
        assert.equal('userAgent' in refusal!, false);
        assert.equal(served!.userAgent, `Ignition/2.20.0${'x'.repeat(256 - 15)}`);
        assert.deepEqual([served!.revision, served!.sha256, served!.format, served!.ignitionVersion], [3, 'ab'.repeat(32), 'ignition', '3.4.0']);
      }));
    });

    describe('machine status', () => {
      it('an audit row with its lifecycle event commits both at once, or neither; a refusal\'s event is ignored', using(makeStore, async (store) => {
        await store.create('Machine', { name: 'node-1', spec: machine() });
        const served = { kind: 'served' as const, served: { revision: 1, sha256: 'ab'.repeat(32), format: 'ignition' as const, ignitionVersion: '3.4.0' } };
        await store.recordAudit({ machine: 'node-1', route: '/ipxe', client: '10.0.0.1', status: 200 }, {}, { kind: 'booting' });
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.phase, 'Booting');
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 403 }, { maxRefused: 10 }, served);
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.phase, 'Booting', 'a refusal moves no lifecycle');
        // An audit row the store refuses (no machine) takes its event with it.
        await assert.rejects(store.recordAudit({ machine: null as unknown as string, route: '/ignition', client: '10.0.0.1', status: 200 }, {}, served));
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.phase, 'Booting', 'nothing of the failed write stays');
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 200 }, {}, served);
        const record = (await store.statuses(['node-1'])).get('node-1')!;
        assert.deepEqual([record.phase, record.served?.sha256], ['Provisioning', 'ab'.repeat(32)]);
        assert.deepEqual((await store.audit('node-1')).map((r) => r.status), [200, 403, 200]);
      }, true));

      it('Registered → Booting → Provisioning → Joined, with transitions, what was served and the report; counted in the fleet', using(makeStore, async (store) => {
        await store.create('Machine', { name: 'node-1', spec: machine() });
        await store.create('Machine', { name: 'node-2', spec: machine() });
        assert.deepEqual(await store.statuses(['node-1', 'node-2']), new Map());
        assert.equal(await store.updateStatus('node-1', { kind: 'booting' }), true);
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.phase, 'Booting');
        await store.updateStatus('node-1', { kind: 'served', served: { revision: 1, sha256: 'cd'.repeat(32), format: 'ignition', ignitionVersion: '3.4.0' } });
        await store.updateStatus('node-1', { kind: 'served', served: { revision: 1, sha256: 'cd'.repeat(32), format: 'ignition', ignitionVersion: '3.4.0' } });
        const provisioning = (await store.statuses(['node-1'])).get('node-1')!;
        assert.equal(provisioning.phase, 'Provisioning');
        assert.deepEqual(provisioning.transitions.map((t) => t.phase), ['Booting', 'Provisioning']);
        assert.equal(provisioning.served!.sha256, 'cd'.repeat(32));
        assert.match(provisioning.served!.time, ISO);
        const future = new Date(Date.now() + 3600_000).toISOString();
        assert.deepEqual((await store.fleet(future)).phases, { Registered: 1, Booting: 0, Provisioning: 0, Joined: 0, Failed: 0, Stalled: 1 });
        assert.deepEqual(await store.fleet('2000-01-01T00:00:00.000Z'), { machines: 2, phases: { Registered: 1, Booting: 0, Provisioning: 1, Joined: 0, Failed: 0, Stalled: 0 }, discovered: 0 });
        assert.equal(await store.updateStatus('node-1', { kind: 'report', report: { outcome: 'success', exitCode: 0, output: 'This node has joined the cluster' }, maxReports: 2 }), true);
        const joined = (await store.statuses(['node-1'])).get('node-1')!;
        assert.equal(joined.phase, 'Joined');
        assert.deepEqual(joined.lastReport && [joined.lastReport.outcome, joined.lastReport.exitCode, joined.lastReport.output], ['success', 0, 'This node has joined the cluster']);
        assert.equal(await store.updateStatus('node-1', { kind: 'report', report: { outcome: 'failure', exitCode: 1, output: '' }, maxReports: 2 }), true);
        assert.equal(await store.updateStatus('node-1', { kind: 'report', report: { outcome: 'success', exitCode: 0, output: '' }, maxReports: 2 }), false);
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.phase, 'Failed');
        await store.recordDiscovered({ mac: '52:54:00:00:00:01' });
        assert.deepEqual(await store.fleet(future), { machines: 2, phases: { Registered: 1, Booting: 0, Provisioning: 0, Joined: 0, Failed: 1, Stalled: 0 }, discovered: 1 });
        // A deleted machine's record goes with it: created again, it starts Registered.
        await store.delete('Machine', 'node-1');
        assert.deepEqual(await store.statuses(['node-1']), new Map());
        assert.equal((await store.fleet(future)).machines, 1);
      }, true));

      it("keeps what iPXE reported at the /ipxe that started the boot, not overwritten while Booting, and through the phases after it", using(makeStore, async (store) => {
        await store.create('Machine', { name: 'node-1', spec: machine() });
        await store.updateStatus('node-1', { kind: 'booting', firmware: { mac: '52:54:00:00:00:01', buildarch: 'x86_64', platform: 'pcbios', client: '10.0.0.1' } });
        // A second /ipxe while Booting (a retry, or anyone who knows the MAC): nothing to write.
        assert.equal(await store.updateStatus('node-1', { kind: 'booting', firmware: { mac: '52:54:00:00:00:01', buildarch: 'x86_64', platform: 'efi', client: '10.0.0.2' } }), false);
        const booting = (await store.statuses(['node-1'])).get('node-1')!;
        assert.deepEqual(booting.transitions.map((t) => t.phase), ['Booting']);
        assert.deepEqual(booting.firmware, { mac: '52:54:00:00:00:01', buildarch: 'x86_64', platform: 'pcbios', client: '10.0.0.1' });
        await store.updateStatus('node-1', { kind: 'served', served: { revision: 1, sha256: 'ab'.repeat(32), format: 'cloud-config' } });
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.firmware?.platform, 'pcbios');
        // The next boot reports anew; one that reports nothing keeps what was reported before.
        await store.updateStatus('node-1', { kind: 'booting', firmware: { mac: '52:54:00:00:00:01', buildarch: 'x86_64', platform: 'efi', client: '10.0.0.2' } });
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.firmware?.platform, 'efi');
        await store.updateStatus('node-1', { kind: 'served', served: { revision: 1, sha256: 'ab'.repeat(32), format: 'cloud-config' } });
        await store.updateStatus('node-1', { kind: 'booting' });
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.firmware?.client, '10.0.0.2');
      }, true));

      it("a fetch after Joined or Failed with no /ipxe since is flagged without-ipxe in its audit row and starts no cycle; after /ipxe it does", using(makeStore, async (store) => {
        await store.create('Machine', { name: 'node-1', spec: machine() });
        const served = (sha: string) => ({ kind: 'served' as const, served: { revision: 1, sha256: sha.repeat(32), format: 'cloud-config' as const } });
        const fetch = (sha: string) => store.recordAudit({ machine: 'node-1', route: '/nocloud/user-data', client: '10.0.0.1', status: 200 }, {}, served(sha));
        await store.recordAudit({ machine: 'node-1', route: '/ipxe', client: '10.0.0.1', status: 200 }, {}, { kind: 'booting' });
        await fetch('ab');
        await store.updateStatus('node-1', { kind: 'report', report: { outcome: 'success', exitCode: 0, output: '' }, maxReports: 1 });
        // A reboot re-reading its user-data, or a curl with a leaked URL: still Joined.
        await fetch('cd');
        const joined = (await store.statuses(['node-1'])).get('node-1')!;
        assert.deepEqual([joined.phase, joined.transitions.map((t) => t.phase), joined.served!.sha256, joined.reports], ['Joined', ['Booting', 'Provisioning', 'Joined'], 'cd'.repeat(32), 1]);
        assert.deepEqual((await store.audit('node-1')).map((r) => [r.route, r.reason]), [['/nocloud/user-data', 'without-ipxe'], ['/nocloud/user-data', undefined], ['/ipxe', undefined]]);
        // The next PXE boot is a new cycle.
        await store.recordAudit({ machine: 'node-1', route: '/ipxe', client: '10.0.0.1', status: 200 }, {}, { kind: 'booting' });
        await fetch('ef');
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.phase, 'Provisioning');
        assert.equal((await store.audit('node-1'))[0]!.reason, undefined);
      }, true));

      it('concurrent reports never exceed the per-fetch cap', using(makeStore, async (store) => {
        await store.updateStatus('node-1', { kind: 'served', served: { revision: 1, sha256: 'ef'.repeat(32), format: 'cloud-config' } });
        const results = await Promise.all(Array.from({ length: 20 }, (_v, i) => store.updateStatus('node-1', { kind: 'report', report: { outcome: 'success', exitCode: 0, output: String(i) }, maxReports: 5 })));
        assert.equal(results.filter(Boolean).length, 5);
        assert.equal((await store.statuses(['node-1'])).get('node-1')!.reports, 5);
      }));
    });

    describe('minted tokens', () => {
      const minted = (machine: string, token: string, incarnation = 'a'.repeat(16)) => ({ machine, incarnation, cluster: 'prod', token, expiresAt: '2026-12-06T10:00:00Z' });

      it('20 concurrent claims for one machine: one wins and every claim answers it', using(makeStore, async (store) => {
        const claims = Array.from({ length: 20 }, (_, i) => minted('node-1', `tok${String(i).padStart(3, '0')}.0123456789abcdef`));
        const answers = await Promise.all(claims.map((c) => store.claimMintedToken(c)));
        const winners = new Set(answers.map((a) => a.token));
        assert.equal(winners.size, 1);
        assert.ok(claims.some((c) => c.token === answers[0]!.token));
        assert.deepEqual(await store.mintedToken('node-1'), answers[0]);
        assert.equal(await store.mintedToken('node-2'), undefined);
      }));

      it('extends and forgets only the token it names', using(makeStore, async (store) => {
        await store.claimMintedToken(minted('node-1', 'aaaaaa.0123456789abcdef'));
        await store.extendMintedToken('node-1', 'bbbbbb.0123456789abcdef', '2030-01-01T00:00:00Z');
        assert.equal((await store.mintedToken('node-1'))!.expiresAt, '2026-12-06T10:00:00Z', 'another token is not extended');
        await store.extendMintedToken('node-1', 'aaaaaa.0123456789abcdef', '2026-12-06T11:00:00Z');
        assert.equal((await store.mintedToken('node-1'))!.expiresAt, '2026-12-06T11:00:00Z');
        await store.forgetMintedToken('node-1', 'bbbbbb.0123456789abcdef');
        assert.ok(await store.mintedToken('node-1'), 'another token is not forgotten');
        await store.forgetMintedToken('node-1', 'aaaaaa.0123456789abcdef');
        assert.equal(await store.mintedToken('node-1'), undefined);
        const again = await store.claimMintedToken(minted('node-1', 'cccccc.0123456789abcdef', 'b'.repeat(16)));
        assert.equal(again.token, 'cccccc.0123456789abcdef', 'a forgotten token makes room for a new claim');
      }));

      it('outlive the machine, survive a restart, and page by machine name', async () => {
        let store = await withBase(makeStore);
        try {
          await store.create('Machine', { name: 'node-1', spec: machine() });
          for (const name of ['node-3', 'node-1', 'node-2']) await store.claimMintedToken(minted(name, `${name.replace('-', '')}x.0123456789abcdef`));
          await store.delete('Machine', 'node-1');
          await store.close();
          store = await reopen(store);
          assert.deepEqual((await store.mintedTokens({ limit: 2 })).map((t) => t.machine), ['node-1', 'node-2']);
          assert.deepEqual((await store.mintedTokens({ after: 'node-2' })).map((t) => t.machine), ['node-3']);
          assert.equal((await store.mintedToken('node-1'))!.token, 'node1x.0123456789abcdef');
        } finally {
          await store.close();
        }
      });
    });

    describe('fetch counting', () => {
      it('50 concurrent takeFetch calls with max 7: exactly 7 succeed', using(makeStore, async (store) => {
        const results = await Promise.all(Array.from({ length: 50 }, () => store.takeFetch('node-1', 7)));
        assert.equal(results.filter(Boolean).length, 7);
        assert.equal(await store.fetchCount('node-1'), 7);
        assert.equal(await store.takeFetch('node-1', 7), false);
        assert.equal(await store.fetchCount('node-1'), 7, 'a refusal does not count');
        assert.equal(await store.takeFetch('node-1', 8), true, 'a raised limit allows more');
        assert.equal(await store.fetchCount('node-2'), 0);
        await store.resetFetches('node-1');
        assert.equal(await store.fetchCount('node-1'), 0);
        assert.equal(await store.takeFetch('node-1', 1), true);
        assert.equal(await store.takeFetch('node-1', 1), false);
        assert.equal(await store.takeFetch('node-3', 0), false, 'max 0 allows none');
        assert.equal(await store.fetchCount('node-3'), 0);
      }));

      it('deleting a machine resets its counter', using(makeStore, async (store) => {
        await store.create('Machine', { name: 'node-1', spec: machine({ maxFetches: 1 }) });
        assert.equal(await store.takeFetch('node-1', 1), true);
        await store.delete('Machine', 'node-1');
        assert.equal(await store.fetchCount('node-1'), 0);
      }, true));
    });

    describe('discovered machines', () => {
      it('upserts on the normalised identity, keeping first seen and moving last seen', using(makeStore, async (store) => {
        const first = (await store.recordDiscovered({ mac: 'AA-BB-CC-DD-EE-01', uuid: '4C4C4544-0042-3510-8052-B4C04F4E3232', serial: 'SN 42/A&B' }))!;
        assert.match(first.id, /^\d+$/);
        assert.deepEqual({ ...first, firstSeen: '', lastSeen: '' }, { id: first.id, mac: 'aa:bb:cc:dd:ee:01', uuid: '4c4c4544-0042-3510-8052-b4c04f4e3232', serial: 'SN 42/A&B', firstSeen: '', lastSeen: '', count: 1 });
        assert.equal(first.firstSeen, first.lastSeen);
        await sleep(5);
        const again = (await store.recordDiscovered({ mac: 'aabb.ccdd.ee01', uuid: '4c4c45440042351080 52b4c04f4e3232'.replace(' ', ''), serial: 'SN 42/A&B' }))!;
        assert.equal(again.count, 2);
        assert.equal(again.id, first.id, 'the id stays with the identity');
        assert.equal(again.firstSeen, first.firstSeen);
        assert.ok(again.lastSeen > first.lastSeen);
        await sleep(5);
        const other = (await store.recordDiscovered({ mac: 'aa:bb:cc:dd:ee:02', hostname: 'Rack1-Node7' }, {}, { why: 'no machine has its mac, hostname', buildarch: 'x86_64', platform: 'efi' }))!;
        assert.equal(other.hostname, 'rack1-node7');
        assert.deepEqual([other.why, other.buildarch, other.platform], ['no machine has its mac, hostname', 'x86_64', 'efi']);
        // The latest sighting's account is kept.
        const seenAgain = (await store.recordDiscovered({ mac: 'aa:bb:cc:dd:ee:02', hostname: 'Rack1-Node7' }, {}, { why: 'machine n7 has its mac but another hostname', buildarch: 'arm64' }))!;
        assert.deepEqual([seenAgain.why, seenAgain.buildarch, seenAgain.platform], ['machine n7 has its mac but another hostname', 'arm64', undefined]);
        const all = await store.listDiscovered();
        assert.deepEqual(all.map((d) => [d.mac, d.count]), [['aa:bb:cc:dd:ee:02', 2], ['aa:bb:cc:dd:ee:01', 2]]);
        assert.deepEqual((await store.listDiscovered({ limit: 1 })).map((d) => d.mac), ['aa:bb:cc:dd:ee:02']);
        assert.equal(all[0]!.uuid, undefined);
        assert.equal(all[0]!.serial, undefined);
      }));

      it('keeps at most max entries: a new identity beyond it is not recorded, a known one still is', using(makeStore, async (store) => {
        const mac = (i: number) => `52:54:00:00:00:${String(i).padStart(2, '0')}`;
        for (let i = 0; i < 3; i++) assert.equal((await store.recordDiscovered({ mac: mac(i) }, { max: 3 }))?.mac, mac(i));
        assert.equal(await store.recordDiscovered({ mac: mac(3) }, { max: 3 }), undefined);
        assert.equal((await store.recordDiscovered({ mac: mac(1) }, { max: 3 }))?.count, 2);
        assert.deepEqual((await store.listDiscovered()).map((d) => d.mac).sort(), [mac(0), mac(1), mac(2)]);
        // Concurrent sightings of new identities never exceed the cap.
        await Promise.all(Array.from({ length: 20 }, (_, i) => store.recordDiscovered({ mac: mac(10 + i) }, { max: 5 })));
        assert.equal((await store.listDiscovered()).length, 5);
      }));

      it('deletes entries last seen longer ago than the retention', using(makeStore, async (store) => {
        await store.recordDiscovered({ mac: '52:54:00:00:00:01' });
        await sleep(1100);
        await store.recordDiscovered({ mac: '52:54:00:00:00:02' }, { retentionSeconds: 1 });
        assert.deepEqual((await store.listDiscovered()).map((d) => d.mac), ['52:54:00:00:00:02']);
      }));

      it('a machine matching an entry (no selector conflicting) marks it enrolled; seen again unmatched clears it', using(makeStore, async (store) => {
        const byMac = (await store.recordDiscovered({ mac: '52:54:00:00:e0:01', hostname: 'n1' }))!;
        const byUuid = (await store.recordDiscovered({ uuid: '4c4c4544-0042-3510-8052-b4c04f4e3201' }))!;
        const conflicting = (await store.recordDiscovered({ mac: '52:54:00:00:e0:01', hostname: 'somewhere-else' }))!;
        const unrelated = (await store.recordDiscovered({ serial: 'SN-1' }))!;
        await store.create('Machine', { name: 'n1', spec: machine({}, { mac: ['52-54-00-00-E0-01'], uuid: '4C4C4544-0042-3510-8052-B4C04F4E3201', hostname: 'N1' }) });
        assert.deepEqual((await store.listDiscovered()).map((d) => d.id).sort(), [conflicting.id, unrelated.id].sort());
        const all = await store.listDiscovered({ includeEnrolled: true });
        assert.deepEqual(Object.fromEntries(all.map((d) => [d.id, d.enrolled ?? ''])), { [byMac.id]: 'n1', [byUuid.id]: 'n1', [conflicting.id]: '', [unrelated.id]: '' });
        assert.equal((await store.getDiscovered(byMac.id)).enrolled, 'n1');
        // A replace matching the serial marks that one too.
        await store.replace('Machine', { name: 'n1', spec: machine({}, { mac: ['52-54-00-00-E0-01'], serial: 'SN-1' }) });
        assert.equal((await store.getDiscovered(unrelated.id)).enrolled, 'n1');
        await store.delete('Machine', 'n1');
        const seen = (await store.recordDiscovered({ mac: '52:54:00:00:e0:01', hostname: 'n1' }))!;
        assert.equal(seen.id, byMac.id);
        assert.equal(seen.enrolled, undefined);
      }, true));

      it('getDiscovered and deleteDiscovered by id; an unknown or malformed id is DiscoveredNotFoundError; ids are never reused', using(makeStore, async (store) => {
        const a = (await store.recordDiscovered({ mac: '52:54:00:00:d0:01' }))!;
        const b = (await store.recordDiscovered({ mac: '52:54:00:00:d0:02' }))!;
        assert.deepEqual(await store.getDiscovered(a.id), a);
        await store.deleteDiscovered(b.id);
        await assert.rejects(store.getDiscovered(b.id), DiscoveredNotFoundError);
        await assert.rejects(store.deleteDiscovered(b.id), DiscoveredNotFoundError);
        await assert.rejects(store.deleteDiscovered('x1'), DiscoveredNotFoundError);
        await assert.rejects(store.getDiscovered('99999999999999999999'), DiscoveredNotFoundError);
        const c = (await store.recordDiscovered({ mac: '52:54:00:00:d0:02' }))!;
        assert.ok(Number(c.id) > Number(b.id), `${c.id} > ${b.id}`);
        assert.deepEqual((await store.listDiscovered()).map((d) => d.mac).sort(), ['52:54:00:00:d0:01', '52:54:00:00:d0:02']);
      }));

      it('refuses an unparseable MAC or UUID, or no identity at all', using(makeStore, async (store) => {
        await assert.rejects(store.recordDiscovered({ mac: 'not-a-mac' }), (e) => e instanceof InvalidArgumentError && e.field === 'mac');
        await assert.rejects(store.recordDiscovered({ uuid: '1234' }), (e) => e instanceof InvalidArgumentError && e.field === 'uuid');
        await assert.rejects(store.recordDiscovered({}), (e) => e instanceof InvalidArgumentError && e.field === 'identity');
        assert.deepEqual(await store.listDiscovered(), []);
      }));
    });

    describe('machine selector index', () => {
      it('finds machines by MAC (any spelling), UUID (any case), host name (any case), serial (exactly) and labels', using(makeStore, async (store) => {
        await store.create('Machine', {
          name: 'node-1',
          spec: machine({}, { mac: ['AA:BB:CC:DD:EE:01', 'aabb.ccdd.ee02'], uuid: '4C4C4544-0042-3510-8052-B4C04F4E3232', serial: 'SN-1', hostname: 'Node1.Example.COM', labels: { rack: 'r1' } }),
        });
        await store.create('Machine', { name: 'node-2', spec: machine({}, { mac: ['aa-bb-cc-dd-ee-03'], serial: 'SN-2', hostname: 'NODE1.example.com' }) });
        await store.create('Machine', { name: 'node-0', spec: machine({}, { mac: ['AABBCCDDEE04'], labels: { rack: 'r1' } }) });
        const find = async (identity: Parameters<Store['findMachinesBy']>[0]) => (await store.findMachinesBy(identity)).map((m) => m.name);
        for (const mac of ['aa:bb:cc:dd:ee:01', 'AA-BB-CC-DD-EE-01', 'aabb.ccdd.ee01', 'AABBCCDDEE01', 'aa:bb:cc:dd:ee:02']) assert.deepEqual(await find({ mac }), ['node-1'], mac);
        assert.deepEqual(await find({ mac: 'aa:bb:cc:dd:ee:04' }), ['node-0']);
        assert.deepEqual(await find({ uuid: '4c4c4544-0042-3510-8052-b4c04f4e3232' }), ['node-1']);
        assert.deepEqual(await find({ uuid: '4C4C454400423510 8052B4C04F4E3232'.replace(' ', '') }), ['node-1']);
        assert.deepEqual(await find({ hostname: 'node1.example.com' }), ['node-1', 'node-2'], 'sorted by name');
        assert.deepEqual(await find({ serial: 'SN-1' }), ['node-1']);
        assert.deepEqual(await find({ serial: 'sn-1' }), [], 'serials compare exactly');
        assert.deepEqual(await find({ labels: { rack: 'r1' } }), ['node-0', 'node-1']);
        assert.deepEqual(await find({ mac: 'aa:bb:cc:dd:ee:03', serial: 'SN-1' }), ['node-1', 'node-2'], 'any selector matching');
        assert.deepEqual(await find({ serial: 'SN-2' }), ['node-2']);
        assert.deepEqual(await find({ mac: 'ff:ff:ff:ff:ff:ff' }), []);
        assert.deepEqual(await find({ mac: 'garbage' }), [], 'an unparseable value selects nothing');
        assert.deepEqual(await find({}), []);
        const found = await store.findMachinesBy({ mac: 'aa:bb:cc:dd:ee:03' });
        assert.deepEqual(found[0]!.spec.selectors.mac, ['aa-bb-cc-dd-ee-03'], 'specs come back as written');
      }, true));

      it("reads a boot's candidates with their profiles, and a fetch's machine, cluster, profile and claim, each at once", using(makeStore, async (store) => {
        await store.create('Profile', { name: 'other', spec: profile({ kubernetesVersion: 'v1.32.4' }) });
        await store.create('Machine', { name: 'node-1', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:01'] }) });
        await store.create('Machine', { name: 'node-2', spec: machine({ profile: 'other' }, { mac: ['aa:bb:cc:dd:ee:02'] }) });
        await store.create('Machine', { name: 'default', spec: machine({ profile: 'other' }) });
        const names = (c: BootCandidates) => [c.machines.map((m) => m.name), [...c.profiles.keys()].sort()];
        assert.deepEqual(names(await store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:01' })), [['node-1'], ['worker']]);
        assert.deepEqual(names(await store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:02' }, 'default')), [['default', 'node-2'], ['other']]);
        assert.deepEqual(names(await store.bootCandidates({ mac: 'ff:ff:ff:ff:ff:ff' }, 'default')), [['default'], ['other']], 'the fallback alone');
        assert.deepEqual(names(await store.bootCandidates({ mac: 'ff:ff:ff:ff:ff:ff' }, 'gone')), [[], []], 'a fallback that does not exist');
        assert.deepEqual(names(await store.bootCandidates({})), [[], []]);
        // At once (one batch of reads on PostgreSQL): each request its own candidates.
        const atOnce = await Promise.all([
          store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:01' }),
          store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:02' }, 'default'),
          store.bootCandidates({ mac: 'ff:ff:ff:ff:ff:ff' }, 'default'),
          store.bootCandidates({ mac: 'ff:ff:ff:ff:ff:ff' }, 'gone'),
          store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:02', serial: 'none' }),
        ]);
        assert.deepEqual(atOnce.map(names), [
          [['node-1'], ['worker']],
          [['default', 'node-2'], ['other']],
          [['default'], ['other']],
          [[], []],
          [['node-2'], ['other']],
        ]);
        const candidates = await store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:02' });
        assert.deepEqual([candidates.machines[0]!.revision, candidates.profiles.get('other')!.spec.kubernetesVersion], [1, 'v1.32.4']);

        await store.replace('Machine', { name: 'node-1', spec: machine({ nodeName: 'n1' }, { mac: ['aa:bb:cc:dd:ee:01'] }) });
        const parts = await store.fetchParts('node-1', 'url-a');
        assert.deepEqual([parts.machine.revision, parts.machine.spec.nodeName, parts.cluster.name, parts.profile.name, parts.claimed], [2, 'n1', 'prod', 'worker', false]);
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 200 }, {}, { kind: 'served', served: { revision: 2, sha256: 'ab'.repeat(32), format: 'ignition' } }, { key: 'url-a', expiresAt: 4_000_000_000 });
        assert.equal((await store.fetchParts('node-1', 'url-a')).claimed, true);
        assert.equal((await store.fetchParts('node-1', 'url-b')).claimed, false);
        assert.equal((await store.fetchParts('node-1')).claimed, false, 'no key, no claim');
        await assert.rejects(store.fetchParts('node-9', 'url-a'), (e) => e instanceof NotFoundError && e.kind === 'Machine');
        // At once (one batch of reads on PostgreSQL): each fetch its own parts, claim or error.
        const together = await Promise.allSettled([store.fetchParts('node-1', 'url-a'), store.fetchParts('node-2', 'url-b'), store.fetchParts('node-9'), store.fetchParts('node-2', 'url-a'), store.fetchParts('default')]);
        assert.deepEqual(
          together.map((r) => (r.status === 'fulfilled' ? [r.value.machine.name, r.value.machine.revision, r.value.profile.name, r.value.cluster.name, r.value.claimed] : `${(r.reason as NotFoundError).kind} ${(r.reason as NotFoundError).resourceName}`)),
          [['node-1', 2, 'worker', 'prod', true], ['node-2', 1, 'other', 'prod', false], 'Machine node-9', ['node-2', 1, 'other', 'prod', true], ['default', 1, 'other', 'prod', false]],
        );
      }, true));

      it('follows replaces and deletes', using(makeStore, async (store) => {
        await store.create('Machine', { name: 'node-1', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:01'], serial: 'S1' }) });
        await store.replace('Machine', { name: 'node-1', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:09'] }) });
        assert.deepEqual(await store.findMachinesBy({ mac: 'aa:bb:cc:dd:ee:01' }), []);
        assert.deepEqual(await store.findMachinesBy({ serial: 'S1' }), []);
        assert.deepEqual((await store.findMachinesBy({ mac: 'aa:bb:cc:dd:ee:09' })).map((m) => [m.name, m.revision]), [['node-1', 2]]);
        await store.delete('Machine', 'node-1');
        assert.deepEqual(await store.findMachinesBy({ mac: 'aa:bb:cc:dd:ee:09' }), []);
      }, true));

      it('refuses a machine whose MAC or UUID selector does not parse, naming the field', using(makeStore, async (store) => {
        await assert.rejects(store.create('Machine', { name: 'node-1', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:01', 'aa:bb:cc:dd:ee'] }) }), (e) => e instanceof InvalidArgumentError && e.field === 'spec.selectors.mac[1]');
        await assert.rejects(store.create('Machine', { name: 'node-1', spec: machine({}, { uuid: 'nope' }) }), (e) => e instanceof InvalidArgumentError && e.field === 'spec.selectors.uuid');
        await assert.rejects(store.get('Machine', 'node-1'), NotFoundError);
      }, true));

      it('refuses a MAC (any spelling), UUID (any case) or serial another machine has, naming the field and the machine', using(makeStore, async (store) => {
        const uuid = '4C4C4544-0042-3510-8052-B4C04F4E3232';
        await store.create('Machine', { name: 'node-1', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:01'], uuid, serial: 'SN-1', hostname: 'shared' }) });
        const dup = (field: string) => (e: unknown) => e instanceof DuplicateSelectorError && e.field === field && e.machine === 'node-1';
        await assert.rejects(store.create('Machine', { name: 'node-2', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:02', 'AABB.CCDD.EE01'] }) }), dup('spec.selectors.mac[1]'));
        await assert.rejects(store.create('Machine', { name: 'node-2', spec: machine({}, { uuid: uuid.toLowerCase().replaceAll('-', '') }) }), dup('spec.selectors.uuid'));
        await assert.rejects(store.create('Machine', { name: 'node-2', spec: machine({}, { serial: ' SN-1 ' }) }), dup('spec.selectors.serial'));
        await assert.rejects(store.get('Machine', 'node-2'), NotFoundError, 'nothing written');
        // Host names and labels may be shared; a machine keeps its own selectors on replace.
        await store.create('Machine', { name: 'node-2', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:02'], hostname: 'SHARED' }) });
        await store.replace('Machine', { name: 'node-1', spec: machine({ maxFetches: 2 }, { mac: ['AA-BB-CC-DD-EE-01'], uuid, serial: 'SN-1' }) });
        await assert.rejects(store.replace('Machine', { name: 'node-2', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:02'], serial: 'SN-1' }) }), dup('spec.selectors.serial'));
        assert.equal((await store.get('Machine', 'node-2')).revision, 1);
        // Deleted, its selectors are free again.
        await store.delete('Machine', 'node-1');
        await store.replace('Machine', { name: 'node-2', spec: machine({}, { mac: ['aa:bb:cc:dd:ee:01'], uuid, serial: 'SN-1' }) });
      }, true));

      it('two machines written at once with one MAC: exactly one is stored', using(makeStore, async (store) => {
        for (let round = 0; round < 5; round++) {
          const mac = `aa:bb:cc:dd:e${round}:01`;
          const names = Array.from({ length: 4 }, (_, i) => `race-${round}-${i}`);
          const results = await Promise.allSettled(names.map((name, i) => store.create('Machine', { name, spec: machine({}, { mac: [i % 2 ? mac.toUpperCase() : mac.replaceAll(':', '-')] }) })));
          assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status)));
          for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof DuplicateSelectorError, String(r.reason));
          assert.equal((await store.findMachinesBy({ mac })).length, 1);
        }
      }, true));
    });

    describe('restart', () => {
      it('closing and opening the same data keeps everything', async () => {
        const store = await withBase(makeStore);
        await store.replace('Cluster', { name: 'prod', labels: { env: 'prod' }, spec: cluster('prod', { certificateKey: 'b'.repeat(64) }) });
        const m = await store.create('Machine', { name: 'node-1', labels: { rack: 'r1' }, spec: machine({ maxFetches: 3 }, { mac: ['aa:bb:cc:dd:ee:01'] }) });
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.9', status: 200 });
        assert.equal(await store.takeFetch('node-1', 3), true);
        const seen = await store.recordDiscovered({ mac: 'aa:bb:cc:dd:ee:77' });
        await store.create('Profile', { name: 'gone', spec: profile() });
        await store.delete('Profile', 'gone');
        const before = {
          clusters: await store.revisions('Cluster', 'prod'),
          profile: await store.get('Profile', 'worker'),
          machine: await store.get('Machine', 'node-1'),
          audit: await store.audit('node-1'),
          discovered: await store.listDiscovered(),
        };
        await store.close();
        await store.close();
        const again = await reopen(store);
        try {
          assert.deepEqual(await again.revisions('Cluster', 'prod'), before.clusters);
          assert.equal(before.clusters.length, 2);
          assert.deepEqual(await again.get('Profile', 'worker'), before.profile);
          assert.deepEqual(await again.get('Machine', 'node-1'), before.machine);
          assert.deepEqual(before.machine, m);
          assert.deepEqual(await again.audit('node-1'), before.audit);
          assert.deepEqual(await again.listDiscovered(), before.discovered);
          assert.deepEqual(before.discovered, [seen]);
          assert.equal(await again.fetchCount('node-1'), 1);
          assert.deepEqual((await again.findMachinesBy({ mac: 'AA:BB:CC:DD:EE:01' })).map((r) => r.name), ['node-1']);
          assert.deepEqual(await again.referencedBy('Cluster', 'prod'), ['node-1']);
          assert.deepEqual((await again.list('Machine', { labelSelector: { rack: 'r1' } })).items.map((r) => r.name), ['node-1']);
          assert.deepEqual((await again.revisions('Profile', 'gone')).map((r) => r.revision), [1]);
          assert.equal((await again.create('Profile', { name: 'gone', spec: profile() })).revision, 2);
          assert.equal((await again.replace('Cluster', { name: 'prod', spec: cluster() }, { ifMatch: 2 })).revision, 3);
          await again.ping();
        } finally {
          await again.close();
        }
      });
    });
  });
}
