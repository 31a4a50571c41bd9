import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IGNITION_SHAPE, invalidValues, missingRequired, type Shape, snakeCase } from '../../../../src/provision/ignition/additional/shape.js';
import { compareSpecs, IGNITION_FEATURES, IGNITION_SPEC_VERSIONS } from '../../../../src/provision/ignition/versions.js';
import { ignitionSchemasSkip, readIgnitionSchema } from '../../../support/conformance.js';

type Node = { $ref?: string; allOf?: Node[]; type?: string | string[]; properties?: Record<string, Node>; items?: Node };

/** Leaf paths (`storage.files[].mode`) and JSON types of a published Ignition schema. */
function schemaLeaves(version: string): Map<string, string> {
  const schema = readIgnitionSchema(version) as Node;
  const look = (ref: string): Node => {
    let node: unknown = schema;
    for (const p of ref.replace(/^#\//, '').split('/')) node = (node as Record<string, unknown>)[p];
    return node as Node;
  };
  const resolve = (n: Node): Node => {
    if (n.$ref) return resolve(look(n.$ref));
    if (n.allOf) return { type: 'object', properties: Object.assign({}, ...n.allOf.map((p) => resolve(p).properties ?? {})) as Record<string, Node> };
    return n;
  };
  const out = new Map<string, string>();
  const walk = (node: Node, at: string) => {
    const n = resolve(node);
    const type = Array.isArray(n.type) ? n.type.find((t) => t !== 'null') : n.type;
    if (type === 'object' || (type === undefined && n.properties)) for (const [k, v] of Object.entries(n.properties ?? {})) walk(v, at ? `${at}.${k}` : k);
    else if (type === 'array') walk(n.items!, `${at}[]`);
    else out.set(at, type!);
  };
  walk(schema, '');
  return out;
}

function shapeLeaves(shape: Shape, at = '', out = new Map<string, string>()): Map<string, string> {
  if (typeof shape === 'string') out.set(at, shape);
  else if (Array.isArray(shape)) shapeLeaves(shape[0] as Shape, `${at}[]`, out);
  else for (const [k, v] of Object.entries(shape)) shapeLeaves(v, at ? `${at}.${k}` : k, out);
  return out;
}

describe('IGNITION_SHAPE', { skip: ignitionSchemasSkip(IGNITION_SPEC_VERSIONS) }, () => {
  const shape = shapeLeaves(IGNITION_SHAPE);

  it('is the field tree of the published 3.6.0 schema, types included', () => {
    assert.deepEqual([...shape.entries()].sort(), [...schemaLeaves('3.6.0').entries()].sort());
  });

  it('every field missing from an older spec is a feature newer than that spec (versions.ts), so declared versions are enforced', () => {
    for (const version of IGNITION_SPEC_VERSIONS) {
      const leaves = schemaLeaves(version);
      for (const field of shape.keys()) {
        if (leaves.has(field)) continue;
        const covered = IGNITION_FEATURES.some((f) => compareSpecs(f.since, version) > 0 && f.when === undefined && (field === f.path || field.startsWith(`${f.path}.`) || field.startsWith(`${f.path}[]`)));
        assert.ok(covered, `${field} is not in spec ${version} but no feature covers it`);
      }
    }
  });

  it('snakeCase gives Butane names', () => {
    assert.deepEqual(['sshAuthorizedKeys', 'passwordHash', 'sizeMiB', 'startMiB', 'typeGuid', 'httpHeaders', 'certificateAuthorities', 'keyFile'].map(snakeCase), [
      'ssh_authorized_keys',
      'password_hash',
      'size_mib',
      'start_mib',
      'type_guid',
      'http_headers',
      'certificate_authorities',
      'key_file',
    ]);
  });
});

describe('missingRequired', () => {
  it('names required fields a config leaves out, with Ignition paths', () => {
    const config = {
      storage: { files: [{ mode: 420, contents: { source: 'https://x', httpHeaders: [{ value: 'v' }] } }], links: [{ path: '/l' }] },
      systemd: { units: [{ dropins: [{ contents: 'x' }] }] },
      passwd: { users: [{ shell: '/bin/sh' }] },
      ignition: { config: { merge: [{}] } },
    };
    assert.deepEqual(missingRequired(config), [
      { at: 'ignition.config.merge[0].source', message: 'required' },
      { at: 'storage.files[0].path', message: 'required' },
      { at: 'storage.links[0].target', message: 'required' },
      { at: 'systemd.units[0].name', message: 'required' },
      { at: 'systemd.units[0].dropins[0].name', message: 'required' },
      { at: 'passwd.users[0].name', message: 'required' },
      { at: 'storage.files[0].contents.httpHeaders[0].name', message: 'required' },
    ]);
  });
});

describe('invalidValues', () => {
  it('names compression, hash and format values Ignition refuses', () => {
    const config = {
      storage: {
        files: [{ path: '/a', contents: { source: 'https://x', compression: 'xz', verification: { hash: 'md5-abc' } } }],
        filesystems: [{ device: '/dev/sdb', format: 'ntfs' }, { device: '/dev/sdc', format: 'ext4' }],
      },
      ignition: { config: { merge: [{ source: 'https://y', verification: { hash: `sha512-${'a'.repeat(128)}` } }] } },
    };
    assert.deepEqual(invalidValues(config), [
      { at: 'storage.files[0].contents.compression', message: 'must be gzip or empty' },
      { at: 'storage.files[0].contents.verification.hash', message: 'must be sha512-<128 hex digits> or sha256-<64 hex digits>' },
      { at: 'storage.filesystems[0].format', message: 'must be one of ext4, btrfs, xfs, vfat, swap, none' },
    ]);
  });
});

describe('invalidValues: modes', () => {
  it('names every file and directory mode outside 0..07777 (Ignition: illegal file mode)', () => {
    const config = { storage: { files: [{ path: '/a', mode: -1 }, { path: '/b', mode: 0o7777 }], directories: [{ path: '/d', mode: 0o10000 }, { path: '/e', mode: 0 }] } };
    assert.deepEqual(invalidValues(config), [
      { at: 'storage.files[0].mode', message: 'illegal file mode' },
      { at: 'storage.directories[0].mode', message: 'illegal file mode' },
    ]);
  });
});
