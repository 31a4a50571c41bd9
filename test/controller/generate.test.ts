/**
 * The certificate authorities the controller generates for a Cluster without a control
 * plane provider (src/controller/generate.ts), read back with Node's own X.509 parser:
 * a self-signed CA with CN `kubernetes`, path length 0 and the validity asked for, its key
 * PEM-encoded as Cluster API encodes it, and the service-account pair's halves matching.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { ENCRYPTION_ALGORITHMS, generatePair } from '../../src/controller/generate.js';

describe('generated cluster certificates', () => {
  for (const [algorithm, header, type] of [
    ['RSA-2048', 'RSA PRIVATE KEY', 'rsa'],
    ['ECDSA-P256', 'EC PRIVATE KEY', 'ec'],
    ['ECDSA-P384', 'EC PRIVATE KEY', 'ec'],
  ] as const) {
    it(`${algorithm}: a CA as Cluster API makes it, its key as Cluster API encodes it`, async () => {
      const now = new Date('2026-12-04T12:00:00Z');
      const { cert, key } = await generatePair('ca', algorithm, 365, now);
      const ca = new X509Certificate(cert);
      assert.equal(ca.subject, 'CN=kubernetes');
      assert.equal(ca.issuer, 'CN=kubernetes');
      assert.ok(ca.ca);
      assert.ok(ca.verify(ca.publicKey), 'self-signed');
      assert.equal(Date.parse(ca.validFrom), now.getTime() - 5 * 60_000);
      assert.equal(Date.parse(ca.validTo), now.getTime() + 365 * 86_400_000);
      assert.ok(key.startsWith(`-----BEGIN ${header}-----\n`));
      const privateKey = createPrivateKey(key);
      assert.equal(privateKey.asymmetricKeyType, type);
      assert.ok(ca.checkPrivateKey(privateKey));
      assert.match(ca.toLegacyObject().serialNumber, /^[0-7][0-9A-F]*$/i, 'a positive serial');
    });
  }

  it('the service-account pair: a public key and its private key', async () => {
    const { cert, key } = await generatePair('sa', 'RSA-2048', 365);
    assert.ok(cert.startsWith('-----BEGIN PUBLIC KEY-----\n'));
    const derived = createPublicKey(createPrivateKey(key)).export({ type: 'spki', format: 'pem' }).toString();
    assert.equal(derived, cert);
  });

  it('knows the encryption algorithms kubeadm and Cluster API name', async () => {
    assert.deepEqual(ENCRYPTION_ALGORITHMS, ['RSA-2048', 'RSA-3072', 'RSA-4096', 'ECDSA-P256', 'ECDSA-P384']);
    await assert.rejects(generatePair('ca', 'RSA-1024', 365), /unknown encryption algorithm RSA-1024/);
  });
});
