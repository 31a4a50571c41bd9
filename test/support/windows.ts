/**
 * Windows inputs for tests: Cluster API Provider Azure's Windows worker
 * KubeadmConfigTemplate (test/fixtures/windows/, source in its header), with clusterctl's
 * variables substituted, wrapped with the example cluster context; and cloudbase-init's
 * reading of a cloud-config, for holding the output to what cloudbase-init takes.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { capiRequest } from './capi.js';

/** The clusterctl variables of the CAPZ template, as a user would set them. */
const VARIABLES: Record<string, string> = {
  CLUSTER_NAME: 'capz-win',
  AZURE_SSH_PUBLIC_KEY: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG5vdC1hLXJlYWwta2V5LWp1c3QtYS10ZXN0 capi@example',
};

/** The Secret value CAPZ writes for `${CLUSTER_NAME}-md-win-azure-json` (its `azure.json` shape). */
export const AZURE_JSON = '{"cloud":"AzurePublicCloud","tenantId":"00000000-0000-0000-0000-000000000000","useManagedIdentityExtension":false}\n';

/** `${VAR}` and `${VAR:=default}` substituted as `clusterctl generate cluster` does. */
function clusterctl(text: string): string {
  return text.replace(/\$\{([A-Z_][A-Z0-9_]*)(?::=([^}]*))?\}/g, (_m, name: string, fallback?: string) => VARIABLES[name] ?? fallback ?? '');
}

/** The fixture's KubeadmConfigTemplate, clusterctl variables substituted. */
export function capzWindowsTemplate(): Record<string, unknown> & { spec: { template: { spec: Record<string, unknown> & { files: Record<string, unknown>[]; joinConfiguration: { nodeRegistration: Record<string, unknown> } } } } } {
  const text = readFileSync(new URL('../fixtures/windows/capz-windows-md-win.yaml', import.meta.url), 'utf8');
  return load(clusterctl(text)) as ReturnType<typeof capzWindowsTemplate>;
}

/**
 * The CAPZ Windows worker as a NodeBootstrap in Cluster API shape. Two fields of the
 * template are resolved here the way the caller would until bootwright resolves them
 * itself (issue 12, other branches): the `contentFrom.secret` of `c:/k/azure.json` becomes
 * its content ({@link AZURE_JSON}), and the instance-data Jinja node name
 * (`{{ ds.meta_data["local_hostname"] }}`) is left out, so the node is named by
 * `metadata.name`.
 */
export function capzWindowsRequest(): Record<string, unknown> & { spec: Record<string, unknown> } {
  const template = capzWindowsTemplate();
  const spec = template.spec.template.spec;
  const azureJson = spec.files[0]!;
  delete azureJson.contentFrom;
  azureJson.content = AZURE_JSON;
  delete spec.joinConfiguration.nodeRegistration.name;
  const req = capiRequest('worker', 'v1beta1');
  req.spec.kubeadmConfig = template;
  return req;
}

/** A cloud-config as cloudbase-init loads it (PyYAML, YAML 1.1). */
export function cloudbaseInitDocument(text: string): Record<string, unknown> {
  assert.ok(text.startsWith('#cloud-config\n'));
  return load(text, { schema: YAML11_SCHEMA }) as Record<string, unknown>;
}

/**
 * The bytes cloudbase-init writes for each `write_files` entry, keyed by path
 * (`write_files.py`: content encoded UTF-8, then `_decode_steps`: `gz`/`gzip`;
 * `gz+base64`, `gzip+base64`, `gz+b64`, `gzip+b64`; `b64`/`base64`; anything else plain).
 */
export function cloudbaseInitFiles(text: string): Map<string, Buffer> {
  const doc = cloudbaseInitDocument(text) as { write_files?: { path: string; content: string; encoding?: string }[] };
  const out = new Map<string, Buffer>();
  for (const f of doc.write_files ?? []) {
    const enc = (f.encoding ?? '').toLowerCase().trim();
    let bytes = Buffer.from(f.content, 'utf8');
    if (['gz+base64', 'gzip+base64', 'gz+b64', 'gzip+b64', 'b64', 'base64'].includes(enc)) bytes = Buffer.from(bytes.toString('latin1'), 'base64');
    if (['gz', 'gzip', 'gz+base64', 'gzip+base64', 'gz+b64', 'gzip+b64'].includes(enc)) bytes = gunzipSync(bytes);
    out.set(f.path, bytes);
  }
  return out;
}
