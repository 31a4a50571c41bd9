/**
 * Resource documents (src/store/documents.ts) and identity normalisation
 * (src/store/identity.ts): where secrets are, how placeholders are put back, binary file
 * contents made JSON-safe, and the MAC/UUID spellings the index accepts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonSafeSpec, redactSpec, REDACTED, restoreSecrets, toReadDocument } from '../../src/store/documents.js';
import { normaliseMac, normaliseUuid } from '../../src/store/identity.js';

describe('redactSpec', () => {
  it('redacts the cluster token, certificate key and private keys, nothing else', () => {
    const spec = { name: 'prod', bootstrapToken: 't', certificateKey: 'k', caCertHashes: ['h'], certificates: { ca: { cert: 'C', key: 'K1' }, serviceAccount: { cert: 'P', key: 'K2' } } };
    assert.deepEqual(redactSpec('Cluster', spec), {
      name: 'prod',
      bootstrapToken: REDACTED,
      certificateKey: REDACTED,
      caCertHashes: ['h'],
      certificates: { ca: { cert: 'C', key: REDACTED }, serviceAccount: { cert: 'P', key: REDACTED } },
    });
    assert.equal(spec.bootstrapToken, 't', 'the input is not changed');
  });

  it('redacts user passwords and tokens or certificate keys in kubeadm overrides of a profile', () => {
    const spec = {
      role: 'init',
      kubernetesVersion: 'v1.33.2',
      kubeadm: { initConfiguration: { bootstrapTokens: [{ token: 'abcdef.0123456789abcdef', ttl: '1h' }], certificateKey: 'x' }, joinConfiguration: { discovery: { tlsBootstrapToken: 'y' } } },
      provisioning: { users: [{ name: 'ops', passwd: '$6$x', sudo: 'ALL' }], files: [{ path: '/etc/token', content: 'not a secret field' }] },
    };
    assert.deepEqual(redactSpec('Profile', spec), {
      role: 'init',
      kubernetesVersion: 'v1.33.2',
      kubeadm: { initConfiguration: { bootstrapTokens: [{ token: REDACTED, ttl: '1h' }], certificateKey: REDACTED }, joinConfiguration: { discovery: { tlsBootstrapToken: REDACTED } } },
      provisioning: { users: [{ name: 'ops', passwd: REDACTED, sudo: 'ALL' }], files: [{ path: '/etc/token', content: 'not a secret field' }] },
    });
  });

  it('machines carry no secrets', () => {
    const spec = { selectors: { mac: ['aa:bb:cc:dd:ee:ff'], serial: 'token' }, cluster: 'prod', profile: 'p' };
    assert.deepEqual(redactSpec('Machine', spec), spec);
  });
});

describe('restoreSecrets', () => {
  it('puts stored values back at placeholders; passwords by user name', () => {
    const current = { provisioning: { users: [{ name: 'a', passwd: 'PA' }, { name: 'b', passwd: 'PB' }] } };
    const sent = { provisioning: { users: [{ name: 'b', passwd: REDACTED }, { name: 'a', passwd: REDACTED }, { name: 'c', passwd: 'new' }] } };
    const r = restoreSecrets('Profile', sent, current);
    assert.deepEqual(r.problems, []);
    assert.equal(r.restored, true);
    assert.deepEqual(r.spec, { provisioning: { users: [{ name: 'b', passwd: 'PB' }, { name: 'a', passwd: 'PA' }, { name: 'c', passwd: 'new' }] } });
  });

  it('reports a placeholder with nothing behind it, and leaves real values alone', () => {
    const r = restoreSecrets('Cluster', { bootstrapToken: REDACTED, certificateKey: 'given', certificates: { ca: { cert: 'C', key: REDACTED } } }, { bootstrapToken: 'T' });
    assert.deepEqual(r.spec, { bootstrapToken: 'T', certificateKey: 'given', certificates: { ca: { cert: 'C', key: REDACTED } } });
    assert.deepEqual(r.problems, [{ path: 'spec.certificates.ca.key', message: `is "${REDACTED}" but there is no stored value to keep; send the secret itself` }]);
    assert.deepEqual(restoreSecrets('Cluster', { bootstrapToken: 'new' }, undefined), { spec: { bootstrapToken: 'new' }, problems: [], restored: false });
  });
});

describe('jsonSafeSpec', () => {
  it('stores binary file contents as base64 with the matching encoding', () => {
    const bytes = new Uint8Array([0x1f, 0x8b, 0, 255]);
    const spec = { role: 'worker', kubernetesVersion: 'v1.33.2', provisioning: { files: [{ path: '/a', content: bytes, encoding: 'gzip' }, { path: '/b', content: bytes }, { path: '/c', content: 'text' }] } };
    assert.deepEqual(jsonSafeSpec('Profile', spec).provisioning.files, [
      { path: '/a', content: 'H4sA/w==', encoding: 'gzip+base64' },
      { path: '/b', content: 'H4sA/w==', encoding: 'base64' },
      { path: '/c', content: 'text' },
    ]);
    assert.equal(spec.provisioning.files[0]!.content, bytes, 'the input is not changed');
  });
});

describe('toReadDocument', () => {
  it('is Kubernetes-style with the revision in metadata and machine refs in status', () => {
    const at = '2030-01-01T00:00:00.000Z';
    assert.deepEqual(
      toReadDocument({ kind: 'Machine', name: 'm', labels: { a: 'b' }, revision: 3, spec: { cluster: 'c' }, refs: { clusterRevision: 2, profileRevision: 5 }, rules: 1, createdAt: at, updatedAt: at }),
      { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Machine', metadata: { name: 'm', labels: { a: 'b' }, revision: 3, createdAt: at, updatedAt: at }, spec: { cluster: 'c' }, status: { clusterRevision: 2, profileRevision: 5 } },
    );
  });
});

describe('identity normalisation', () => {
  it('MAC addresses: colon, hyphen, Cisco dot and bare forms, any case', () => {
    for (const mac of ['aa:bb:cc:dd:ee:0f', 'AA:BB:CC:DD:EE:0F', 'aa-bb-cc-dd-ee-0f', 'AA-BB-CC-DD-EE-0F', 'aabb.ccdd.ee0f', 'AABB.CCDD.EE0F', 'aabbccddee0f', ' AABBCCDDEE0F ']) {
      assert.equal(normaliseMac(mac), 'aa:bb:cc:dd:ee:0f', mac);
    }
    for (const bad of ['', 'aa:bb:cc:dd:ee', 'aa:bb:cc:dd:ee:0f:11', 'aa:bb-cc:dd:ee:0f', 'gg:bb:cc:dd:ee:0f', 'aabb.ccdd.ee0', 'aabbccddee0', 'a:b:c:d:e:f']) {
      assert.equal(normaliseMac(bad), undefined, bad);
    }
  });

  it('UUIDs: hyphenated or bare, any case', () => {
    for (const uuid of ['4C4C4544-0042-3510-8052-B4C04F4E3232', '4c4c4544-0042-3510-8052-b4c04f4e3232', '4C4C4544004235108052B4C04F4E3232']) {
      assert.equal(normaliseUuid(uuid), '4c4c4544-0042-3510-8052-b4c04f4e3232', uuid);
    }
    for (const bad of ['', '4c4c4544-0042-3510-8052', '4c4c4544-00423510-8052-b4c04f4e3232', 'zzzz4544-0042-3510-8052-b4c04f4e3232']) assert.equal(normaliseUuid(bad), undefined, bad);
  });
});
