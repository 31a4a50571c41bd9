import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  IGNITION_FEATURES,
  IGNITION_SPEC_VERSIONS,
  type IgnitionSpecVersion,
  featuresUsed,
  highestSpecAtMost,
  lowestSpecFor,
  unsupportedFeature,
} from '../../../src/provision/ignition/versions.js';
import { ignitionSchemasSkip, readIgnitionSchema } from '../../support/conformance.js';

describe('highestSpecAtMost', () => {
  const table: [string, IgnitionSpecVersion | undefined][] = [
    ['3.0.0', '3.0.0'],
    ['3.1.0', '3.1.0'],
    ['3.4.0', '3.4.0'],
    ['3.6.0', '3.6.0'],
    ['3.4.2', '3.4.0'],
    ['3.9.0', '3.6.0'],
    ['3.10.0', '3.6.0'],
    ['3.2', '3.2.0'],
    ['3.0', '3.0.0'],
    [' 3.3.0 ', '3.3.0'],
    ['3.5.0-experimental', '3.4.0'],
    ['3.7.0-experimental', '3.6.0'],
    ['3.0.0-experimental', undefined],
    ['2.3.0', undefined],
    ['2.2', undefined],
    ['4.0.0', undefined],
    ['3', undefined],
    ['', undefined],
    ['latest', undefined],
    ['3.x.0', undefined],
    ['v3.4.0', undefined],
    ['3.4.0.1', undefined],
  ];
  for (const [requested, expected] of table) {
    it(`${JSON.stringify(requested)} → ${String(expected)}`, () => assert.equal(highestSpecAtMost(requested), expected));
  }
});

describe('lowestSpecFor / unsupportedFeature', () => {
  const base = { ignition: { version: '3.0.0' } };
  const cases: [string, Record<string, unknown>, IgnitionSpecVersion, string?][] = [
    ['a plain config', { ...base, storage: { files: [{ path: '/etc/a', mode: 420, contents: { source: 'data:,a' } }] } }, '3.0.0'],
    ['gzip of an https source (3.0.0 has it)', { ...base, storage: { files: [{ path: '/etc/a', contents: { source: 'https://x/a.gz', compression: 'gzip' } }] } }, '3.0.0'],
    [
      'gzip of a data URL',
      { ...base, storage: { files: [{ path: '/etc/a', contents: { compression: 'gzip', source: 'data:;base64,H4sI' } }] } },
      '3.1.0',
      'storage.files[0].contents.compression',
    ],
    ['gzip of an appended data URL', { ...base, storage: { files: [{ path: '/etc/a', append: [{ source: 'data:,a' }, { compression: 'gzip', source: 'data:;base64,H4sI' }] }] } }, '3.1.0', 'storage.files[0].append[1].compression'],
    ['ignition.proxy', { ignition: { version: '3.0.0', proxy: { httpProxy: 'http://p' } } }, '3.1.0', 'ignition.proxy'],
    ['merge compression', { ignition: { version: '3.0.0', config: { merge: [{ source: 'https://x', compression: 'gzip' }] } } }, '3.1.0', 'ignition.config.merge[0].compression'],
    ['httpHeaders', { ...base, storage: { files: [{ path: '/etc/a', contents: { source: 'https://x', httpHeaders: [{ name: 'A', value: 'b' }] } }] } }, '3.1.0', 'storage.files[0].contents.httpHeaders'],
    ['sha256 verification', { ...base, storage: { files: [{ path: '/etc/a', contents: { source: 'https://x', verification: { hash: 'sha256-00' } } }] } }, '3.1.0'],
    ['sha512 verification', { ...base, storage: { files: [{ path: '/etc/a', contents: { source: 'https://x', verification: { hash: 'sha512-00' } } }] } }, '3.0.0'],
    ['mountOptions', { ...base, storage: { filesystems: [{ device: '/dev/sdb', format: 'btrfs', mountOptions: ['subvolid=5'] }] } }, '3.1.0'],
    ['gs:// source', { ...base, storage: { files: [{ path: '/etc/a', contents: { source: 'gs://bucket/a' } }] } }, '3.2.0'],
    ['luks', { ...base, storage: { luks: [{ name: 'x', device: '/dev/sdb' }] } }, '3.2.0', 'storage.luks'],
    ['partition resize', { ...base, storage: { disks: [{ device: '/dev/sda', partitions: [{ label: 'root', resize: true }] }] } }, '3.2.0', 'storage.disks[0].partitions[0].resize'],
    ['user shouldExist', { ...base, passwd: { users: [{ name: 'core', shouldExist: false }] } }, '3.2.0'],
    ['kernelArguments', { ...base, kernelArguments: { shouldExist: ['a'] } }, '3.3.0'],
    ['format none', { ...base, storage: { filesystems: [{ device: '/dev/sdb', format: 'none' }] } }, '3.3.0'],
    ['arn: source', { ...base, storage: { files: [{ path: '/etc/a', contents: { source: 'arn:aws:s3:::b/a' } }] } }, '3.4.0'],
    ['luks discard', { ...base, storage: { luks: [{ name: 'x', device: '/dev/sdb', discard: true }] } }, '3.4.0', 'storage.luks[0].discard'],
    ['tang advertisement', { ...base, storage: { luks: [{ name: 'x', clevis: { tang: [{ url: 'u', advertisement: '{}' }] } }] } }, '3.4.0'],
    ['luks cex', { ...base, storage: { luks: [{ name: 'x', cex: { enabled: true } }] } }, '3.5.0', 'storage.luks[0].cex'],
    ['setuid file', { ...base, storage: { files: [{ path: '/usr/local/bin/x', mode: 0o4755 }] } }, '3.6.0', 'storage.files[0].mode'],
    ['sticky directory', { ...base, storage: { directories: [{ path: '/var/shared', mode: 0o1777 }] } }, '3.6.0', 'storage.directories[0].mode'],
    ['null means unset', { ignition: { version: '3.0.0', proxy: null }, storage: { luks: null, files: [{ path: '/etc/a', contents: { compression: null, source: 'data:,a' } }] } }, '3.0.0'],
  ];
  for (const [name, config, expected, at] of cases) {
    it(`${name} → ${expected}`, () => {
      const fit = lowestSpecFor(config);
      assert.equal(fit.version, expected);
      if (expected === '3.0.0') assert.equal(fit.because, undefined);
      if (at) assert.equal(fit.because?.at, at);
      for (const v of IGNITION_SPEC_VERSIONS) {
        const use = unsupportedFeature(config, v);
        if (IGNITION_SPEC_VERSIONS.indexOf(v) >= IGNITION_SPEC_VERSIONS.indexOf(expected)) assert.equal(use, undefined, v);
        else assert.equal(use?.feature.since, expected, v);
      }
    });
  }

  it('names the use needing the highest spec when several are too new', () => {
    const config = { ignition: { version: '3.0.0', proxy: {} }, storage: { files: [{ path: '/x', mode: 0o2755 }], luks: [{ name: 'a' }] } };
    const use = unsupportedFeature(config, '3.1.0');
    assert.equal(use?.feature.name, 'storage.files[].mode with setuid/setgid/sticky bits');
    assert.equal(use.feature.since, '3.6.0');
    assert.equal(use.at, 'storage.files[0].mode');
    assert.deepEqual(
      featuresUsed(config).map((u) => u.at),
      ['ignition.proxy', 'storage.luks', 'storage.files[0].mode'],
    );
  });
});

/** Follow local `$ref`s (`#/definitions/...`) to the schema node they name. */
function resolveRef(schema: Record<string, unknown>, node: Record<string, unknown>): Record<string, unknown> {
  let n = node;
  while (typeof n.$ref === 'string') {
    n = n.$ref
      .slice(2)
      .split('/')
      .reduce<Record<string, unknown>>((acc, key) => acc[key] as Record<string, unknown>, schema);
  }
  return n;
}

/** The schema node at a feature path (`[]` = list items), or undefined when the schema has no such field. */
function schemaNode(schema: Record<string, unknown>, featurePath: string): unknown {
  const props = (node: Record<string, unknown>) => propsOf(schema, node) as Record<string, Record<string, unknown>>;
  let node: Record<string, unknown> | undefined = schema;
  for (const seg of featurePath.replaceAll('[]', '.[]').split('.')) {
    if (!node) return undefined;
    node = seg === '[]' ? (resolveRef(schema, node).items as Record<string, unknown> | undefined) : props(node)[seg];
  }
  return node;
}

const noSchemas = ignitionSchemasSkip(IGNITION_SPEC_VERSIONS);

describe('the feature table agrees with the published schemas', { skip: noSchemas }, () => {
  const schemas = new Map(noSchemas ? [] : IGNITION_SPEC_VERSIONS.map((v) => [v, readIgnitionSchema(v)]));
  for (const feature of IGNITION_FEATURES) {
    it(`${feature.name} (${feature.since})`, () => {
      const at = IGNITION_SPEC_VERSIONS.indexOf(feature.since);
      // The field exists from `since` on...
      for (const v of IGNITION_SPEC_VERSIONS.slice(at)) assert.ok(schemaNode(schemas.get(v)!, feature.path), `${feature.path} missing from the ${v} schema`);
      // ...and, when the field itself is the feature, not before.
      if (!feature.when) {
        for (const v of IGNITION_SPEC_VERSIONS.slice(0, at)) assert.equal(schemaNode(schemas.get(v)!, feature.path), undefined, `${feature.path} already in the ${v} schema`);
      }
    });
  }

  it('every field new in a schema version is in the table', () => {
    const fieldPaths = (schema: Record<string, unknown>): Set<string> => {
      const out = new Set<string>();
      const walk = (node: Record<string, unknown>, at: string, depth: number) => {
        if (depth > 8) return;
        for (const key of Object.keys(propsOf(schema, node))) {
          const p = at ? `${at}.${key}` : key;
          out.add(p);
          const child = schemaNode(schema, p) as Record<string, unknown>;
          walk(child, p, depth + 1);
          const items = schemaNode(schema, `${p}[]`) as Record<string, unknown> | undefined;
          if (items) walk(items, `${p}[]`, depth + 1);
        }
      };
      walk(schema, '', 0);
      return out;
    };
    const covered = IGNITION_FEATURES.filter((f) => !f.when).map((f) => f.path);
    for (const [i, v] of IGNITION_SPEC_VERSIONS.entries()) {
      if (i === 0) continue;
      const before = fieldPaths(schemas.get(IGNITION_SPEC_VERSIONS[i - 1]!)!);
      for (const p of fieldPaths(schemas.get(v)!)) {
        if (before.has(p)) continue;
        assert.ok(covered.some((c) => p === c || p.startsWith(`${c}.`) || p.startsWith(`${c}[]`)), `${p} is new in ${v} but not in IGNITION_FEATURES`);
      }
    }
  });
});

function propsOf(schema: Record<string, unknown>, node: Record<string, unknown>): Record<string, unknown> {
  const n = resolveRef(schema, node);
  const own = (n.properties ?? {}) as Record<string, unknown>;
  const inherited = ((n.allOf ?? []) as Record<string, unknown>[]).map((a) => propsOf(schema, a));
  return Object.assign({}, ...inherited, own) as Record<string, unknown>;
}

describe('lowestSpecFor: illegal modes', () => {
  it('a mode outside 0..07777 is no setuid/setgid/sticky feature (rules.ts calls it illegal at any spec)', () => {
    assert.equal(lowestSpecFor({ storage: { files: [{ path: '/a', mode: -1 }], directories: [{ path: '/d', mode: 0o17777 }] } }).version, '3.0.0');
    assert.equal(lowestSpecFor({ storage: { directories: [{ path: '/d', mode: 0o1777 }] } }).version, '3.6.0');
  });
});
