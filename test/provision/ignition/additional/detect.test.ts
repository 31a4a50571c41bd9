import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detectAdditionalConfig, ParseProblem } from '../../../../src/provision/ignition/additional/detect.js';

function problem(text: string): string {
  try {
    detectAdditionalConfig(text);
  } catch (e) {
    assert.ok(e instanceof ParseProblem);
    return e.message;
  }
  assert.fail('expected a ParseProblem');
}

describe('detectAdditionalConfig', () => {
  it('tells the kind by content', () => {
    assert.equal(detectAdditionalConfig('{"ignition": {"version": "3.4.0"}}').kind, 'ignition');
    assert.equal(detectAdditionalConfig('ignition:\n  version: 3.2.0\n').kind, 'ignition');
    assert.equal(detectAdditionalConfig('variant: fcos\nversion: 1.4.0\n').kind, 'butane');
    assert.equal(detectAdditionalConfig('{"variant": "flatcar", "version": "1.0.0"}').kind, 'butane');
    assert.equal(detectAdditionalConfig('storage:\n  files: []\n').kind, 'clc');
  });

  it('reads modes written 0644 as octal in Butane and CLC (go-yaml)', () => {
    const butane = detectAdditionalConfig('variant: fcos\nversion: 1.4.0\nstorage: {files: [{path: /a, mode: 0644}]}\n').document as { storage: { files: { mode: number }[] } };
    assert.equal(butane.storage.files[0]!.mode, 0o644);
    const clc = detectAdditionalConfig('storage: {files: [{path: /a, mode: 0640}]}\n').document as { storage: { files: { mode: number }[] } };
    assert.equal(clc.storage.files[0]!.mode, 0o640);
  });

  it('reports malformed JSON and YAML with a position and never the text', () => {
    const secret = 'hunter2-s3cr3t';
    const json = problem(`{"ignition": {"version": "3.4.0"}, "passwd": {"users": [{"name": "a", "passwordHash": "${secret}" ]}}`);
    assert.match(json, /^malformed JSON at line 1 column \d+/);
    assert.ok(!json.includes(secret));
    const yaml = problem(`variant: fcos\nversion: 1.4.0\npasswd:\n  users:\n    - name: a\n      password_hash: [${secret}\n`);
    assert.match(yaml, /^malformed YAML at line \d+ column \d+/);
    assert.ok(!yaml.includes(secret));
    assert.match(problem('a: 1\na: 2\n'), /duplicated mapping key/);
  });

  it('refuses empty text and documents that are not mappings', () => {
    assert.equal(problem('  \n'), 'is empty');
    assert.match(problem('- a\n- b\n'), /must be a mapping/);
  });
});
