/**
 * The Secrets a Cluster API template references (issue 12), passed beside it: `spec.secrets`,
 * a list of Kubernetes Secret objects (core/v1 `Secret`, as `kubectl get secret -o yaml`
 * prints them: `data` base64, `stringData` text). Cluster API's kubeadm bootstrap provider
 * (CABPK) reads `files[].contentFrom.secret` and `users[].passwdFrom.secret` from the API
 * server, in the KubeadmConfig's namespace (`resolveSecretFileContent`,
 * `resolveSecretPasswordContent` in bootstrap/kubeadm/internal/controllers); bootwright
 * reads them from this list instead.
 *
 * Secret contents are secrets: no problem built here quotes one (they name the reference
 * and the Secret and key names, which Kubernetes does not treat as secret), and the values
 * only ever flow into the bootstrap data the node receives.
 */
import { z } from 'zod';
import type { FieldProblem } from '../../errors.js';
import { zodProblems } from '../parse.js';

/** A Secret's name: a DNS-1123 subdomain (Kubernetes `ValidateSecretName`). */
const secretName = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a DNS-1123 subdomain (a Secret name)');

/** A key of a Secret's data (Kubernetes `IsConfigMapKey`): `-`, `_`, `.` and alphanumerics, at most 253 characters. */
const secretKey = z
  .string()
  .max(253)
  .regex(/^[-._a-zA-Z0-9]+$/, 'must be a Secret key: letters, digits, "-", "_" and "."');

/** Standard base64 with padding (RFC 4648 §4), as the Kubernetes API writes `[]byte` fields. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A Kubernetes Secret (core/v1) as `kubectl get -o yaml` prints it; metadata beyond name and namespace is read for nothing. */
export const secretObjectSchema = z
  .strictObject({
    apiVersion: z.literal('v1').optional(),
    kind: z.literal('Secret').optional(),
    metadata: z.looseObject({ name: secretName, namespace: z.string().optional() }),
    type: z.string().optional(),
    immutable: z.boolean().optional(),
    data: z.record(secretKey, z.string().refine((v) => BASE64.test(v), 'must be standard base64 (Kubernetes Secret data)')).optional(),
    stringData: z.record(secretKey, z.string()).optional(),
  })
  .meta({
    id: 'Secret',
    description:
      'A Kubernetes Secret (core/v1) that files[].contentFrom.secret or users[].passwdFrom.secret of the Cluster API input names. ' +
      '`data` values are base64, `stringData` values text (stringData wins for a key in both, as in Kubernetes). Contents are never logged, echoed or stored.',
  });

/** `spec.secrets`: the Secrets, each name at most once per namespace. */
export const secretListSchema = z.array(secretObjectSchema).meta({
  description: 'Kubernetes Secret objects the Cluster API input references (files[].contentFrom, users[].passwdFrom); only with spec.kubeadmConfigSpec or spec.kubeadmConfig',
});

/** A `contentFrom` / `passwdFrom` reference. */
export interface SecretKeyReference {
  secret: { name: string; key: string };
}

/** One Secret: its namespace as given, and each key's bytes (data decoded, stringData merged over it). */
interface IndexedSecret {
  namespace?: string;
  values: Map<string, Uint8Array<ArrayBuffer>>;
}

/** The Secrets of a request, by name, for resolving references. */
export interface SecretIndex {
  /**
   * The bytes of `ref.secret.key` of the Secret `ref.secret.name` (in `namespace` when
   * both it and the Secret name one), or a problem at `at` (the reference's field) naming
   * the missing Secret or key; undefined when `spec.secrets` itself is invalid (its
   * problems are reported, not a missing Secret for every reference).
   */
  resolve(ref: SecretKeyReference, at: string): Uint8Array<ArrayBuffer> | FieldProblem | undefined;
}

/**
 * Read `spec.secrets` into an index.
 *
 * @param value the `spec.secrets` value as given (undefined: no Secrets)
 * @param namespace the KubeadmConfig's namespace (`metadata.namespace`), where CABPK
 *   looks Secrets up; undefined for a bare `kubeadmConfigSpec`
 * @returns the index, and the problems of the list itself (schema, a name twice), each at
 *   its `spec.secrets[i]` field; no problem quotes a value
 */
export function indexSecrets(value: unknown, namespace: string | undefined): { index: SecretIndex; problems: FieldProblem[] } {
  const byName = new Map<string, IndexedSecret[]>();
  const problems: FieldProblem[] = [];
  if (value !== undefined) {
    const parsed = secretListSchema.safeParse(value);
    if (!parsed.success) problems.push(...zodProblems(parsed.error, 'spec.secrets'));
    else {
      parsed.data.forEach((secret, i) => {
        const name = secret.metadata.name;
        const others = byName.get(name) ?? [];
        if (others.some((o) => o.namespace === secret.metadata.namespace)) {
          problems.push({ path: `spec.secrets[${i}].metadata.name`, message: `Secret "${name}" is given twice` });
          return;
        }
        const values = new Map<string, Uint8Array<ArrayBuffer>>();
        for (const [key, b64] of Object.entries(secret.data ?? {})) values.set(key, Buffer.from(b64, 'base64'));
        for (const [key, text] of Object.entries(secret.stringData ?? {})) values.set(key, Buffer.from(text, 'utf8'));
        byName.set(name, [...others, { ...(secret.metadata.namespace !== undefined ? { namespace: secret.metadata.namespace } : {}), values }]);
      });
    }
  }
  const resolve = (ref: SecretKeyReference, at: string): Uint8Array<ArrayBuffer> | FieldProblem | undefined => {
    if (problems.length > 0) return undefined;
    const { name, key } = ref.secret;
    const all = byName.get(name) ?? [];
    const candidates = all.filter((s) => s.namespace === undefined || namespace === undefined || s.namespace === namespace);
    if (candidates.length === 0) {
      const elsewhere = all.length > 0 ? ` (spec.secrets has "${name}" only in namespace ${all.map((s) => `"${String(s.namespace)}"`).join(', ')}, and the KubeadmConfig is in "${String(namespace)}")` : '';
      return { path: `${at}.secret.name`, message: `names Secret "${name}", which is not in spec.secrets${elsewhere}: pass the Secret beside the Cluster API input` };
    }
    if (candidates.length > 1) return { path: `${at}.secret.name`, message: `names Secret "${name}", which spec.secrets has in more than one namespace: give the KubeadmConfig's metadata.namespace` };
    const bytes = candidates[0]!.values.get(key);
    if (bytes === undefined) return { path: `${at}.secret.key`, message: `names key "${key}" of Secret "${name}", which has no such key` };
    return bytes;
  };
  return { index: { resolve }, problems };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as UTF-8 text, or undefined when they are not well-formed UTF-8. */
export function secretText(bytes: Uint8Array): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}
