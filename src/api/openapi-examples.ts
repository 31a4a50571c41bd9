/**
 * Real examples for the OpenAPI document (issue 14: "/docs that works"): the request
 * and response bodies of the inventory and render operations are the repository's own
 * example files (examples/worker.yaml, examples/inventory/), and the responses are those
 * files as the service would answer them: validated with the same schemas, defaults
 * applied, secrets redacted by the same code (src/store/documents.ts), at revision 1.
 *
 * The files ship with the package (package.json `files`). A copy without them gets a
 * document without examples, never an error.
 */
import { toReadDocument } from '../store/documents.js';
import { EXAMPLE_STORED_AT as AT, exampleFile as file, storedExample } from '../store/examples.js';
import { RESOURCE_API_VERSION, type ResourceKind } from '../store/resources.js';
import { problem } from './problems.js';

/** The example files, relative to the package root, for each kind. */
const FILES: Record<ResourceKind, string> = {
  Cluster: 'examples/inventory/cluster.yaml',
  Profile: 'examples/inventory/flatcar/profile.yaml',
  Machine: 'examples/inventory/flatcar/machine.yaml',
};

/** Examples by operationId: the request body, and the body of each status. */
export interface OperationExamples {
  request?: unknown;
  responses: Record<string, unknown>;
}

/**
 * Every operation's examples.
 *
 * @returns a map from operationId; empty when the example files are absent.
 */
export function operationExamples(): Record<string, OperationExamples> {
  const out: Record<string, OperationExamples> = {};
  const notFound = problem('not-found', 404, 'Machine "rack1-n9" does not exist');
  for (const kind of Object.keys(FILES) as ResourceKind[]) {
    const example = storedExample(kind, FILES[kind]);
    if (!example) continue;
    const { written, stored } = example;
    const read = toReadDocument(stored);
    const list = { apiVersion: RESOURCE_API_VERSION, kind: `${kind}List`, metadata: {}, items: [read] };
    const invalid = problem('invalid-request', 422, 'the request is not valid', [{ path: 'spec.cluster', message: 'cluster "nowhere" does not exist' }]);
    out[`create${kind}`] = { request: written, responses: { 201: read, 422: invalid } };
    out[`replace${kind}`] = { request: written, responses: { 200: read, 412: problem('precondition-failed', 412, `If-Match does not name the current revision: ${kind} "${stored.name}" is at revision 2, not 1; read it again and retry`) } };
    out[`get${kind}`] = { responses: { 200: read, 404: notFound } };
    out[`list${kind}s`] = { responses: { 200: list } };
    out[`list${kind}Revisions`] = { responses: { 200: { apiVersion: RESOURCE_API_VERSION, kind: `${kind}RevisionList`, items: [read] } } };
  }
  const worker = file('examples/worker.yaml');
  if (worker !== undefined) out.renderNodeBootstrap = { request: worker, responses: {} };
  const discovered = { id: '7', mac: '52:54:00:10:00:03', hostname: 'rack1-n3', firstSeen: AT, lastSeen: AT, count: 2 };
  out.listDiscoveredMachines = { responses: { 200: { items: [discovered, { ...discovered, id: '5', mac: '52:54:00:10:00:01', hostname: 'rack1-n1', enrolled: 'rack1-n1' }] } } };
  out.getDiscoveredMachine = { responses: { 200: discovered } };
  out.getMachineAudit = { responses: { 200: { items: [{ id: 2, machine: 'rack1-n1', route: '/ignition', client: '192.168.10.31', status: 200, at: AT }, { id: 1, machine: 'rack1-n1', route: '/ipxe', client: '192.168.10.31', status: 200, at: AT }] } } };
  return out;
}

interface MediaTypes {
  content?: Record<string, { example?: unknown }>;
}

/**
 * Put the examples into an OpenAPI document's operations: each request body media type
 * and each response media type of a status with an example gets `example`.
 */
export function withExamples<T extends object>(doc: T, examples: Record<string, OperationExamples> = operationExamples()): T {
  const paths = (doc as { paths?: Record<string, Record<string, { operationId?: string; requestBody?: MediaTypes; responses?: Record<string, MediaTypes> }>> }).paths ?? {};
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      const e = op.operationId !== undefined ? examples[op.operationId] : undefined;
      if (!e) continue;
      if (e.request !== undefined) for (const media of Object.values(op.requestBody?.content ?? {})) media.example = e.request;
      for (const [status, body] of Object.entries(e.responses)) for (const media of Object.values(op.responses?.[status]?.content ?? {})) media.example = body;
    }
  }
  return doc;
}
