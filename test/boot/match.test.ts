import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machineIdentity, type MachineIdentity } from '../../src/boot/identity.js';
import { compareSelectors, enrolmentSelectors, matchMachine, type MatchCandidate, whyUnmatched } from '../../src/boot/match.js';
import type { MachineSpec, StoredResource } from '../../src/store/resources.js';

const MAC_A = '52:54:00:00:00:0a';
const MAC_B = '52:54:00:00:00:0b';
const UUID_X = '11111111-2222-3333-4444-555555555555';
const UUID_Y = '99999999-8888-7777-6666-555555555555';

function machine(name: string, selectors: Partial<MatchCandidate['spec']['selectors']>): MatchCandidate {
  return { name, spec: { selectors: { mac: [], labels: {}, ...selectors } } };
}

function id(query: string): MachineIdentity {
  return machineIdentity(new URLSearchParams(query));
}

describe('compareSelectors', () => {
  it('counts mac once however many MACs match, and normalises both sides', () => {
    const m = machine('m', { mac: ['52-54-00-00-00-0A', '5254.0000.000b'], uuid: UUID_X.toUpperCase(), serial: ' SN1 ', hostname: 'Node.', labels: { rack: 'r1', zone: 'a' } });
    assert.deepEqual(compareSelectors(id(`mac=${MAC_B}&uuid=${UUID_X}&serial=SN1&hostname=node&rack=r1`), m), {
      matched: ['mac', 'uuid', 'serial', 'hostname', 'label:rack'],
      conflicts: [],
      defined: 6,
    });
  });

  it('reports conflicts for defined selectors reported differently, ignores unreported ones', () => {
    const m = machine('m', { mac: [MAC_A], uuid: UUID_X, labels: { rack: 'r1', zone: 'a' } });
    assert.deepEqual(compareSelectors(id(`mac=${MAC_B}&uuid=${UUID_X}&rack=r2`), m), {
      matched: ['uuid'],
      conflicts: ['mac', 'label:rack'],
      defined: 4,
    });
  });

  it('counts a malformed machine value as never agreeing', () => {
    const m = machine('m', { mac: ['nonsense'], uuid: 'nope' });
    assert.deepEqual(compareSelectors(id(`mac=${MAC_A}&uuid=${UUID_X}`), m), { matched: [], conflicts: ['mac', 'uuid'], defined: 2 });
  });
});

describe('matchMachine', () => {
  it('picks the machine with the most selectors matched', () => {
    const machines = [machine('by-mac', { mac: [MAC_A] }), machine('by-mac-and-uuid', { mac: [MAC_A], uuid: UUID_X }), machine('other', { mac: [MAC_B] })];
    assert.deepEqual(matchMachine(id(`mac=${MAC_A}&uuid=${UUID_X}`), machines), { machine: 'by-mac-and-uuid', matched: ['mac', 'uuid'], byDefault: false });
  });

  it('matches on any one selector, labels included', () => {
    const machines = [machine('by-serial', { serial: 'SN 42/A&B' }), machine('by-label', { labels: { rack: 'r7' } })];
    assert.deepEqual(matchMachine(id('serial_hex=53:4e:20:34:32:2f:41:26:42'), machines), { machine: 'by-serial', matched: ['serial'], byDefault: false });
    assert.deepEqual(matchMachine(id('rack=r7'), machines), { machine: 'by-label', matched: ['label:rack'], byDefault: false });
  });

  it('never matches a machine whose defined selector conflicts, even on a matching MAC', () => {
    const machines = [machine('x', { mac: [MAC_A], uuid: UUID_X })];
    assert.equal(matchMachine(id(`mac=${MAC_A}&uuid=${UUID_Y}`), machines), undefined);
    // The same MAC without a UUID reported is a match: absent is not a conflict.
    assert.deepEqual(matchMachine(id(`mac=${MAC_A}`), machines), { machine: 'x', matched: ['mac'], byDefault: false });
  });

  it('lets a conflict-free machine win over a conflicting one with more matches', () => {
    const machines = [machine('conflicting', { mac: [MAC_A], serial: 'S1', hostname: 'h1' }), machine('clean', { serial: 'S1' })];
    assert.deepEqual(matchMachine(id(`mac=${MAC_A}&serial=S1&hostname=h2`), machines), { machine: 'clean', matched: ['serial'], byDefault: false });
  });

  it('counts a reported MAC missing from a non-empty MAC list as a conflict', () => {
    const machines = [machine('two-nics', { mac: [MAC_A, MAC_B], uuid: UUID_X })];
    assert.equal(matchMachine(id(`mac=52:54:00:00:00:0c&uuid=${UUID_X}`), machines), undefined);
    assert.equal(matchMachine(id(`mac=${MAC_B}&uuid=${UUID_X}`), machines)?.machine, 'two-nics');
  });

  it('breaks ties by more selectors defined, then by name, whatever the input order', () => {
    const a = machine('a', { mac: [MAC_A] });
    const b = machine('b', { mac: [MAC_A] });
    const specific = machine('specific', { mac: [MAC_A], serial: 'S9' });
    const identity = id(`mac=${MAC_A}`);
    for (const order of [
      [a, b, specific],
      [specific, b, a],
      [b, specific, a],
    ]) {
      assert.deepEqual(matchMachine(identity, order), { machine: 'specific', matched: ['mac'], byDefault: false });
    }
    assert.equal(matchMachine(identity, [b, a])?.machine, 'a');
    assert.equal(matchMachine(identity, [a, b])?.machine, 'a');
  });

  it('orders names by code point, not locale', () => {
    const identity = id(`mac=${MAC_A}`);
    assert.equal(matchMachine(identity, [machine('b', { mac: [MAC_A] }), machine('B', { mac: [MAC_A] })])?.machine, 'B');
  });

  it('falls back to the named default only when nothing matches', () => {
    const machines = [machine('known', { mac: [MAC_A] }), machine('catch-all', {})];
    assert.deepEqual(matchMachine(id(`mac=${MAC_B}`), machines, { defaultMachine: 'catch-all' }), { machine: 'catch-all', matched: [], byDefault: true });
    assert.deepEqual(matchMachine(id(`mac=${MAC_A}`), machines, { defaultMachine: 'catch-all' }), { machine: 'known', matched: ['mac'], byDefault: false });
    assert.equal(matchMachine(id(`mac=${MAC_B}`), machines), undefined);
    assert.equal(matchMachine(id(`mac=${MAC_B}`), machines, { defaultMachine: 'missing' }), undefined);
  });

  it('never matches a machine without selectors except as the default', () => {
    const machines = [machine('empty', {})];
    assert.equal(matchMachine(id(`mac=${MAC_A}&uuid=${UUID_X}&rack=1`), machines), undefined);
    assert.equal(matchMachine(id(''), machines), undefined);
    assert.deepEqual(matchMachine(id(''), machines, { defaultMachine: 'empty' }), { machine: 'empty', matched: [], byDefault: true });
  });

  it('matches nothing for an identity that reports nothing', () => {
    assert.equal(matchMachine(id('buildarch=x86_64&platform=efi'), [machine('m', { mac: [MAC_A] })]), undefined);
  });

  it('lets the default machine match normally by its own selectors', () => {
    const machines = [machine('dflt', { mac: [MAC_A] })];
    assert.deepEqual(matchMachine(id(`mac=${MAC_A}`), machines, { defaultMachine: 'dflt' }), { machine: 'dflt', matched: ['mac'], byDefault: false });
  });

  it('takes stored machine resources as they are', () => {
    const stored: StoredResource<MachineSpec> = {
      kind: 'Machine',
      name: 'rack1-node3',
      labels: {},
      revision: 4,
      spec: { selectors: { mac: ['52:54:00:00:00:0a'], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] },
      rules: 1,
      createdAt: '2025-01-01T00:00:00Z',
      updatedAt: '2025-01-01T00:00:00Z',
    };
    assert.deepEqual(matchMachine(id(`mac=${MAC_A}`), [stored]), { machine: 'rack1-node3', matched: ['mac'], byDefault: false });
  });
});

describe('whyUnmatched', () => {
  it('names the machines a differing selector excluded, with what agreed and what differed; else that none has the values reported', () => {
    const machines = [machine('m2', { mac: [MAC_A], uuid: UUID_Y }), machine('m1', { mac: [MAC_A], uuid: UUID_Y, hostname: 'old' }), machine('other', { mac: [MAC_B] })];
    const identity = id(`mac=${MAC_A}&uuid=${UUID_X}&hostname=new`);
    assert.equal(matchMachine(identity, machines), undefined);
    assert.equal(
      whyUnmatched(identity, machines),
      'machine m1 has its mac but another uuid, hostname; machine m2 has its mac but another uuid: a selector that differs excludes a machine',
    );
    assert.equal(whyUnmatched(id(`mac=${MAC_A}&serial=S9`), [machine('other', { mac: [MAC_B] })]), 'no machine has its mac, serial');
    // At most three machines are named.
    const many = ['a', 'b', 'c', 'd', 'e'].map((n) => machine(n, { mac: [MAC_A], uuid: UUID_Y }));
    assert.match(whyUnmatched(identity, many), /^machine a .*; machine c has its mac but another uuid \(and 2 more\): /);
  });
});

describe('enrolmentSelectors', () => {
  it('pins the hardware identity, the host name only when nothing else was reported: a renamed machine still matches', () => {
    const selectors = enrolmentSelectors({ mac: MAC_A, uuid: UUID_X, hostname: 'rack1-n3' });
    assert.deepEqual(selectors, { mac: [MAC_A], uuid: UUID_X });
    const enrolled = machine('rack1-n3', selectors);
    assert.equal(matchMachine(id(`mac=${MAC_A}&uuid=${UUID_X}&hostname=renamed`), [enrolled])?.machine, 'rack1-n3');
    assert.deepEqual(enrolmentSelectors({ hostname: 'only-a-name' }), { mac: [], hostname: 'only-a-name' });
    assert.deepEqual(enrolmentSelectors({ serial: 'SN1', hostname: 'h' }), { mac: [], serial: 'SN1' });
  });
});
