/**
 * The cluster's certificate authorities, generated when no control plane provider made
 * them, as CABPK does for a Cluster without `spec.controlPlaneRef` (standalone
 * control-plane Machines; `util/secret/certificates.go` `LookupOrGenerateCached`, Cluster
 * API v1.14): the cluster CA (`<cluster>-ca`), the etcd CA (`<cluster>-etcd`), the
 * front-proxy CA (`<cluster>-proxy`), each a self-signed CA certificate with CN
 * `kubernetes`, valid from five minutes ago for `caCertificateValidityPeriodDays` (default
 * 3650 days), key usages digital signature, key encipherment and certificate signing,
 * basic constraints CA with path length 0; and the service-account key pair
 * (`<cluster>-sa`: the public key in `tls.crt`). Keys follow
 * `clusterConfiguration.encryptionAlgorithm` (`RSA-2048`, kubeadm's default, `RSA-3072`,
 * `RSA-4096`, `ECDSA-P256`, `ECDSA-P384`), PEM-encoded as Cluster API encodes them
 * (PKCS #1 `RSA PRIVATE KEY`, SEC 1 `EC PRIVATE KEY`). Each Secret is
 * `type: cluster.x-k8s.io/secret`, labelled with the cluster's name and controlled by the
 * KubeadmConfig that made it; one made meanwhile by another (409) is kept.
 */
import 'reflect-metadata';
import { createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { BOOTSTRAP_API, CLUSTER_NAME_LABEL, CLUSTER_SECRET_TYPE, type Cluster, type KubeadmConfig } from './capi.js';
import { isConflict, type Kube } from '../kube/client.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** CABPK's `DefaultCACertificatesExpiryDays`. */
export const DEFAULT_CA_VALIDITY_DAYS = 3650;

/** Web Crypto parameters per `encryptionAlgorithm`. */
const ALGORITHMS: Record<string, webcrypto.RsaHashedKeyGenParams | webcrypto.EcKeyGenParams> = {
  'RSA-2048': { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
  'RSA-3072': { name: 'RSASSA-PKCS1-v1_5', modulusLength: 3072, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
  'RSA-4096': { name: 'RSASSA-PKCS1-v1_5', modulusLength: 4096, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
  'ECDSA-P256': { name: 'ECDSA', namedCurve: 'P-256' },
  'ECDSA-P384': { name: 'ECDSA', namedCurve: 'P-384' },
};

/** The encryption algorithms a cluster configuration may name. */
export const ENCRYPTION_ALGORITHMS = Object.keys(ALGORITHMS);

/** The Secret name suffixes of the authorities and the service-account pair. */
export const GENERATED = ['ca', 'etcd', 'proxy', 'sa'] as const;

/** A key pair, PEM: the CA certificate (or, for `sa`, the public key) and the private key. */
interface Pair {
  cert: string;
  key: string;
}

/** PEM of a private key as Cluster API writes it (PKCS #1 for RSA, SEC 1 for ECDSA). */
async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  const object = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  return object.export({ format: 'pem', type: object.asymmetricKeyType === 'rsa' ? 'pkcs1' : 'sec1' }).toString();
}

/**
 * One generated pair.
 *
 * @param purpose `sa` for the service-account key pair, else a CA
 * @param algorithm an {@link ENCRYPTION_ALGORITHMS} name
 * @param validityDays the CA certificate's lifetime, days
 */
export async function generatePair(purpose: (typeof GENERATED)[number], algorithm: string, validityDays: number, now: Date = new Date()): Promise<Pair> {
  const params = ALGORITHMS[algorithm];
  if (!params) throw new Error(`unknown encryption algorithm ${algorithm}`);
  const keys = (await webcrypto.subtle.generateKey(params, true, ['sign', 'verify']));
  const key = await privateKeyPem(keys.privateKey);
  if (purpose === 'sa') {
    const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
    return { cert: createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ format: 'pem', type: 'spki' }).toString(), key };
  }
  const signingAlgorithm = params.name === 'ECDSA' ? { name: 'ECDSA', hash: (params as webcrypto.EcKeyGenParams).namedCurve === 'P-384' ? 'SHA-384' : 'SHA-256' } : params;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    // 16 random bytes, the high bit cleared: a positive DER INTEGER (RFC 5280 §4.1.2.2).
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)).map((b, i) => (i === 0 ? b & 0x7f : b))).toString('hex'),
    name: 'CN=kubernetes',
    notBefore: new Date(now.getTime() - 5 * 60_000),
    notAfter: new Date(now.getTime() + validityDays * 86_400_000),
    keys,
    signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment | x509.KeyUsageFlags.keyCertSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key };
}

/**
 * Create the Secrets named in `missing` (`<cluster>-ca`, `-etcd`, `-proxy`, `-sa`) with
 * newly generated pairs, controlled by `config`.
 *
 * @returns the names created (a name another created meanwhile is left out)
 * @throws the API server's errors but 409
 */
export async function generateClusterCertificates(kube: Kube, cluster: Cluster, config: KubeadmConfig, missing: readonly string[]): Promise<string[]> {
  const clusterConfiguration = (config.spec?.clusterConfiguration ?? {}) as { encryptionAlgorithm?: string; caCertificateValidityPeriodDays?: number };
  const algorithm = clusterConfiguration.encryptionAlgorithm ?? 'RSA-2048';
  const days = clusterConfiguration.caCertificateValidityPeriodDays ?? DEFAULT_CA_VALIDITY_DAYS;
  const created: string[] = [];
  for (const suffix of GENERATED) {
    const name = `${cluster.metadata.name}-${suffix}`;
    if (!missing.includes(name)) continue;
    const pair = await generatePair(suffix, algorithm, days);
    try {
      await kube.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name,
          namespace: cluster.metadata.namespace!,
          labels: { [CLUSTER_NAME_LABEL]: cluster.metadata.name },
          ownerReferences: [{ apiVersion: BOOTSTRAP_API, kind: 'KubeadmConfig', name: config.metadata.name, uid: config.metadata.uid!, controller: true }],
        },
        type: CLUSTER_SECRET_TYPE,
        data: { 'tls.crt': Buffer.from(pair.cert).toString('base64'), 'tls.key': Buffer.from(pair.key).toString('base64') },
      });
      created.push(name);
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  return created;
}
