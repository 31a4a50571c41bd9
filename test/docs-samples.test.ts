/**
 * The console samples of docs/bare-metal.md are what a real service answers, so they
 * cannot go stale: every block marked `<!-- sample: NAME -->` is made here by the
 * requests its commands stand for, against a real `bootwright` service on loopback
 * holding the cluster, profile and machine that the document's §4 registers (read from
 * its own `curl … <<'EOF'` documents). What changes from run to run (signatures,
 * expiries, incarnations, hashes, times) is written `…`. A block that differs fails the
 * test; `UPDATE_DOCS=1 npm test` writes the blocks anew (review the diff).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ADMIN, testService, type TestService } from './support/server.js';

const DOC = new URL('../docs/bare-metal.md', import.meta.url);
const PUBLIC_URL = 'http://192.168.10.5:8080';
const dir = mkdtempSync(join(tmpdir(), 'bootwright-doc-samples-'));
let svc: TestService;
let base: string;

/** Run-to-run values written `…`, as the document shows them. */
function normalise(text: string): string {
  return text
    .replace(/\b(exp|inc|sig)=[A-Za-z0-9_-]+/g, '$1=…')
    .replace(/"(firstSeen|lastSeen|at|time)":"[^"]+"/g, '"$1":"…"')
    .replace(/sha512-[0-9a-f]+/g, 'sha512-…')
    // What a config fetch served holds its signed report URL: another hash every run.
    .replace(/"sha256":"[0-9a-f]{64}"/g, '"sha256":"…"');
}

/** The User-Agent of the commands' client: curl as Debian bookworm ships it (7.88.1). */
const CURL = { 'user-agent': 'curl/7.88.1' };
const auth = { ...CURL, authorization: `Bearer ${ADMIN}` };
const text = async (path: string, headers: Record<string, string> = CURL) => (await fetch(`${base}${path}`, { headers })).text();

/** Each sample: its commands as the document writes them, and what the service answers them. */
const SAMPLES: Record<string, () => Promise<[command: string, output: string][]>> = {
  'boot-ipxe': async () => [['curl -sS $BW/boot.ipxe', await text('/boot.ipxe')]],
  'ipxe-known': async () => [['curl -sS "$BW/ipxe?mac=52-54-00-12-34-56"', await text('/ipxe?mac=52-54-00-12-34-56')]],
  'ipxe-unknown': async () => [
    ['curl -sS "$BW/ipxe?mac=52-54-00-aa-bb-cc" | sed -n 4p', `${(await text('/ipxe?mac=52-54-00-aa-bb-cc')).split('\n')[3]!}\n`],
    ['curl -sS -H "Authorization: Bearer $TOKEN" $BW/v1/discovered', `${await text('/v1/discovered', auth)}\n`],
  ],
  ignition: async () => {
    const script = await text('/ipxe?mac=52-54-00-12-34-56');
    const url = /ignition\.config\.url=(\S+)/.exec(script)![1]!;
    const query = url.slice(url.indexOf('?'));
    const accept = 'application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1';
    const first = await fetch(`${base}/ignition${query}`, { headers: { ...CURL, accept } });
    await first.arrayBuffer();
    const again = await fetch(`${base}/ignition${query}`, { headers: { ...CURL, accept } });
    await again.arrayBuffer();
    return [
      ['URL=$(curl -sS "$BW/ipxe?mac=52-54-00-12-34-56" | grep -o \'ignition.config.url=[^ ]*\' | cut -d= -f2-)', ''],
      [`curl -sS -o node.ign -w '%{http_code} %{content_type}\\n' -H 'Accept: ${accept}' "$BW/ignition?\${URL#*\\?}"`, `${first.status} ${first.headers.get('content-type')!}\n`],
      [`curl -sS -o /dev/null -w '%{http_code}\\n' -H 'Accept: ${accept}' "$BW/ignition?\${URL#*\\?}"`, `${again.status}\n`],
    ];
  },
  audit: async () => [['curl -sS -H "Authorization: Bearer $TOKEN" "$BW/v1/machines/rack1-node3/audit?limit=2"', `${await text('/v1/machines/rack1-node3/audit?limit=2', auth)}\n`]],
  pointer: async () => [['curl -sS -H "Authorization: Bearer $TOKEN" "$BW/v1/machines/rack1-node3/bootstrap?pointer=true"', `${await text('/v1/machines/rack1-node3/bootstrap?pointer=true', auth)}\n`]],
};

/** A block's text: each command after `$ `, then its output. */
const block = (steps: [string, string][]) => normalise(steps.map(([c, o]) => `$ ${c}\n${o}`).join(''));

before(async () => {
  svc = await testService({ dataDir: join(dir, 'data'), publicUrl: PUBLIC_URL });
  await svc.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  // §4's own documents, in its order.
  const registered = [...readFileSync(DOC, 'utf8').matchAll(/\$BW\/v1\/(clusters|profiles|machines) <<'EOF'\n([\s\S]*?)\nEOF\n/g)];
  assert.deepEqual(registered.map((m) => m[1]), ['clusters', 'profiles', 'machines'], "§4 registers a cluster, a profile and a machine with curl … <<'EOF'");
  for (const [, collection, yaml] of registered) {
    const res = await fetch(`${base}/v1/${collection!}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/yaml' }, body: yaml });
    assert.equal(res.status, 201, await res.text());
  }
});
after(async () => {
  await svc.app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('docs/bare-metal.md samples', () => {
  it('every marked console block is what the service answers, in the document order', async () => {
    let doc = readFileSync(DOC, 'utf8');
    const marked = [...doc.matchAll(/<!-- sample: ([a-z-]+) -->\n( *)```console\n([\s\S]*?)\n\2```/g)];
    assert.deepEqual(marked.map((m) => m[1]).sort(), Object.keys(SAMPLES).sort(), 'each sample is marked once in the document');
    const stale: string[] = [];
    // In document order: the audit sample shows the fetches the samples before it made.
    for (const m of marked) {
      const [whole, name, indent, current] = m as unknown as [string, string, string, string];
      const fresh = block(await SAMPLES[name]!()).trimEnd();
      const shown = current.split('\n').map((l) => l.slice(indent.length)).join('\n');
      if (shown !== fresh) {
        stale.push(`${name}:\n--- document\n${shown}\n+++ service\n${fresh}`);
        const replaced = `<!-- sample: ${name} -->\n${indent}\`\`\`console\n${fresh.split('\n').map((l) => `${indent}${l}`).join('\n')}\n${indent}\`\`\``;
        doc = doc.replace(whole, replaced);
      }
    }
    if (process.env.UPDATE_DOCS === '1') {
      writeFileSync(DOC, doc);
      return;
    }
    assert.deepEqual(stale, [], 'run UPDATE_DOCS=1 npm test to write the samples anew, and review the diff');
  });
});
