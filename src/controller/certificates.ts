/**
 * The cluster's certificates as Cluster API keeps them in the management cluster
 * (`util/secret/certificates.go`): Secrets `<cluster>-ca`, `<cluster>-etcd`,
 * `<cluster>-proxy` and `<cluster>-sa` in the Cluster's namespace, keys `tls.crt` and
 * `tls.key` (the service-account pair holds a public key in `tls.crt`). The control plane
 * provider (KubeadmControlPlane) writes them before its first Machine.
 *
 * Which a node needs, as CABPK decides: `kubeadm init` all four (with keys); a
 * control-plane join all four too, carried in its data (bootwright's request then has no
 * `certificateKey`); a worker only the CA certificate's pin, `caCertHashes`.
 */
import { X509Certificate } from 'node:crypto';
import { caCertHash } from '../request/checks.js';
import type { ClusterInput } from '../request/schema.js';
import type { Cluster } from './capi.js';
import type { Kube } from '../kube/client.js';

/** Secret name suffix per certificate, and the request field it fills. */
const PURPOSES = [
  ['ca', 'ca'],
  ['etcd', 'etcdCA'],
  ['proxy', 'frontProxyCA'],
  ['sa', 'serviceAccount'],
] as const;

/** What was found: the request's `certificates`, the CA pins, and the Secrets not found. */
export interface ClusterCertificates {
  certificates: NonNullable<ClusterInput['certificates']>;
  caCertHashes: string[];
  /** Secret names missing or without both keys, e.g. `prod-etcd`. */
  missing: string[];
}

const text = (data: Record<string, string> | undefined, key: string) => (data?.[key] ? Buffer.from(data[key], 'base64').toString('utf8') : undefined);

/**
 * Read the cluster's certificate Secrets.
 *
 * @param purposes which to read: `all` (init and control-plane joins) or `ca` (workers,
 *   which need only the CA certificate)
 * @throws Error naming the Secret whose `tls.crt` is not a certificate (never its content)
 */
export async function readClusterCertificates(kube: Kube, cluster: Cluster, purposes: 'all' | 'ca'): Promise<ClusterCertificates> {
  const namespace = cluster.metadata.namespace!;
  const out: ClusterCertificates = { certificates: {}, caCertHashes: [], missing: [] };
  for (const [suffix, field] of PURPOSES) {
    if (purposes === 'ca' && suffix !== 'ca') continue;
    const name = `${cluster.metadata.name}-${suffix}`;
    const secret = await kube.get('v1', 'Secret', namespace, name);
    const data = secret?.data as Record<string, string> | undefined;
    const cert = text(data, 'tls.crt');
    const key = text(data, 'tls.key');
    if (!cert || (purposes === 'all' && !key)) {
      out.missing.push(name);
      continue;
    }
    if (suffix === 'ca') {
      // A bundle may hold several certificates (a CA rotation): each gets a pin.
      for (const block of cert.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []) {
        try {
          out.caCertHashes.push(caCertHash(new X509Certificate(block)));
        } catch {
          throw new Error(`Secret ${namespace}/${name} key tls.crt holds a certificate that does not parse`);
        }
      }
      if (out.caCertHashes.length === 0) throw new Error(`Secret ${namespace}/${name} key tls.crt holds no PEM certificate`);
    }
    if (purposes === 'all') out.certificates[field] = { cert, key: key! };
  }
  return out;
}
