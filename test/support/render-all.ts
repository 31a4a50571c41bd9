/**
 * Render a fixed set of requests in every output form and print, as one JSON object,
 * each output's bytes (base64) by name: `node --import tsx test/support/render-all.ts`.
 * test/runtime.test.ts runs it under two Node.js runtimes and compares the bytes.
 *
 * The set: examples/*.yaml, the field cases, and the Cluster API quick start, each as
 * cloud-config, cloud-config over EC2's limit (gzip-compressed whole), Ignition at the
 * lowest spec, at 3.6.0 and at 2.3.0.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { RequestError } from '../../src/errors.js';
import { renderNodeBootstrap, type RenderOptions } from '../../src/render.js';
import { parseNodeBootstrap, validateNodeBootstrap } from '../../src/request/parse.js';
import type { NodeBootstrap } from '../../src/request/schema.js';
import { capiRequest } from './capi.js';

const ROOT = new URL('../../', import.meta.url);

/** The requests, by name. */
function requests(): [string, NodeBootstrap][] {
  const out: [string, NodeBootstrap][] = [];
  for (const dir of ['examples/', 'test/fixtures/cases/']) {
    for (const f of readdirSync(new URL(dir, ROOT)).filter((n) => n.endsWith('.yaml')).sort()) {
      try {
        out.push([`${dir}${f}`, parseNodeBootstrap(readFileSync(new URL(`${dir}${f}`, ROOT), 'utf8'), 'yaml')]);
      } catch (e) {
        if (!(e instanceof RequestError)) throw e; // a case that is refused on purpose
      }
    }
  }
  for (const role of ['init', 'worker'] as const) out.push([`capi-${role}`, validateNodeBootstrap(capiRequest(role, 'v1beta2'))]);
  return out;
}

const FORMS: [string, RenderOptions][] = [
  ['cloud-config', { format: 'cloud-config' }],
  ['cloud-config-aws', { format: 'cloud-config', platform: 'aws' }],
  ['ignition', { format: 'ignition' }],
  ['ignition-3.6.0', { format: 'ignition', ignitionVersion: '3.6.0' }],
  ['ignition-2.3.0', { format: 'ignition', ignitionVersion: '2.3.0' }],
];

const result: Record<string, string> = {};
for (const [name, req] of requests()) {
  for (const [form, options] of FORMS) {
    try {
      const r = renderNodeBootstrap(req, options);
      result[`${name} ${form}`] = Buffer.from(r.gzip ?? r.body).toString('base64');
    } catch (e) {
      if (!(e instanceof RequestError)) throw e;
      result[`${name} ${form}`] = `refused: ${JSON.stringify(e.problems)}`;
    }
  }
}
process.stdout.write(JSON.stringify(result));
