/**
 * Round trip: hard file contents and commands go in, both outputs are decoded the way a
 * node decodes them, and the bytes and command lines that come out equal what went in.
 * Every output also passes the real validators and the conformance schemas.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { checkIgnitionRules } from '../src/provision/ignition/rules.js';
import { checkIgnitionV2Rules } from '../src/provision/ignition/v2/rules.js';
import { renderNodeBootstrap } from '../src/render.js';
import { validateNodeBootstrap } from '../src/request/parse.js';
import { cloudConfigFiles, ignitionFiles } from './support/decode.js';
import { COMMANDS, expectedBytes, files } from './support/hard-contents.js';
import { worker } from './support/requests.js';
import { cloudInitSchema, ignitionValidate, ignitionValidateKnows, validateCloudConfigSchema, validateIgnitionSchema } from './support/validators.js';

const request = () =>
  validateNodeBootstrap(worker({ provisioning: { files: files(), preKubeadmCommands: COMMANDS, postKubeadmCommands: [...COMMANDS].reverse(), bootCommands: COMMANDS.slice(0, 3) } }));

describe('round trip', () => {
  it('cloud-config: every file decodes to its input bytes, every command survives exactly', async () => {
    const out = renderNodeBootstrap(request(), { format: 'cloud-config' });
    assert.deepEqual(validateCloudConfigSchema(out.body), []);
    assert.deepEqual(await cloudInitSchema(out.body), []);
    const decoded = cloudConfigFiles(out.body);
    for (const f of files()) assert.deepEqual(decoded.get(f.path), expectedBytes(f.path), f.path);
    const doc = load(out.body, { schema: YAML11_SCHEMA }) as { runcmd: string[]; bootcmd: string[] };
    assert.deepEqual(doc.runcmd.slice(0, COMMANDS.length), COMMANDS);
    assert.deepEqual(doc.runcmd.slice(COMMANDS.length + 1), [...COMMANDS].reverse());
    assert.deepEqual(doc.bootcmd, COMMANDS.slice(0, 3));
  });

  for (const version of ['2.3.0', '3.0.0', '3.1.0', '3.3.0', '3.4.0', '3.6.0']) {
    it(`Ignition ${version}: every file decodes to its input bytes, every command is a line of the script`, async () => {
      const out = renderNodeBootstrap(request(), { format: 'ignition', ignitionVersion: version });
      assert.equal(out.ignitionVersion, version);
      const config = JSON.parse(out.body) as { storage: { files: { path: string; contents?: { compression?: string } }[] } };
      assert.deepEqual(validateIgnitionSchema(out.body, version), []);
      assert.deepEqual(version === '2.3.0' ? checkIgnitionV2Rules(config) : checkIgnitionRules(config), []);
      if (ignitionValidateKnows(version)) assert.deepEqual(await ignitionValidate(out.body), []);
      const decoded = ignitionFiles(config);
      for (const f of files()) assert.deepEqual(decoded.get(f.path), expectedBytes(f.path), f.path);
      const script = decoded.get('/etc/kubeadm/bootstrap.sh')!.toString('utf8');
      const bootScript = decoded.get('/etc/kubeadm/bootcmd.sh')!.toString('utf8');
      for (const c of COMMANDS) {
        assert.ok(script.includes(`\n${c}\n`), `bootstrap.sh lacks ${JSON.stringify(c)}`);
      }
      for (const c of COMMANDS.slice(0, 3)) assert.ok(bootScript.includes(`\n${c}\n`));
      // gzip is used only where it is smaller, and only from 3.1.0 (Ignition decompresses data: URLs since
      // then; Ignition v0.x, spec 2.x, refuses compression on data: URLs)
      const compression = (path: string) => config.storage.files.find((f) => f.path === path)!.contents?.compression;
      const gzip = !['2.3.0', '3.0.0'].includes(version);
      assert.equal(compression('/etc/roundtrip/gzip-text.txt'), gzip ? 'gzip' : undefined);
      assert.equal(compression('/etc/roundtrip/one-mib.txt'), gzip ? 'gzip' : undefined);
      assert.equal(compression('/etc/roundtrip/gzip.bin'), undefined, 'random bytes do not shrink');
    });
  }
});
