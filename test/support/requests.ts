/**
 * Request fixtures for tests: a minimal valid worker request to start from, and the
 * committed examples (with their real PKI) for init and control-plane.
 */
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';

export const TOKEN = 'abcdef.0123456789abcdef';
export const HASH = `sha256:${'a'.repeat(64)}`;

/** A minimal valid worker NodeBootstrap as plain data; `spec` entries are merged in shallowly. */
export function worker(spec: Record<string, unknown> = {}, name = 'worker-a'): Record<string, unknown> {
  return {
    apiVersion: 'bootwright.dev/v1alpha1',
    kind: 'NodeBootstrap',
    metadata: { name },
    spec: {
      role: 'worker',
      kubernetesVersion: 'v1.33.2',
      cluster: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] },
      ...spec,
    },
  };
}

/** A committed example (`examples/NAME.yaml`) as plain data. */
export function example(name: 'init' | 'control-plane' | 'worker'): Record<string, unknown> & { spec: Record<string, unknown> } {
  return load(readFileSync(new URL(`../../examples/${name}.yaml`, import.meta.url), 'utf8')) as Record<string, unknown> & { spec: Record<string, unknown> };
}
