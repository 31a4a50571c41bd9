import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderIgnition } from '../../../../src/provision/ignition/render.js';
import { renderNodeBootstrap } from '../../../../src/render.js';
import { validateNodeBootstrap } from '../../../../src/request/parse.js';
import { requestError } from '../../../support/errors.js';
import { worker } from '../../../support/requests.js';
import { makePlan } from '../plan.js';

const ORIGIN = 'spec.provisioning.ignition.containerLinuxConfig.additionalConfig';
const withConfig = (additionalConfig: string, strict?: boolean) => ({ ...makePlan(), ignition: { origin: ORIGIN, additionalConfig, ...(strict !== undefined ? { strict } : {}) } });
const message = (text: string, strict?: boolean) => requestError(() => renderIgnition(withConfig(text, strict))).message;
const all = (...messages: string[]) => messages.map((m) => `${ORIGIN}: ${m}`).join('; ');
const warnings = (text: string, strict?: boolean) => renderIgnition(withConfig(text, strict)).warnings;

/** Object.prototype is left as it was (no key was set through a prototype). */
function assertPrototypeClean(): void {
  const probe: Record<string, unknown> = {};
  assert.equal(probe.x, undefined);
  assert.equal(probe.files, undefined);
  assert.equal(Object.getPrototypeOf(probe), Object.prototype);
}

describe('prototype-named keys in additional configs are ordinary unknown keys', () => {
  it('Container Linux Config: __proto__ at the top and in storage (warning, or an error when strict)', () => {
    assert.deepEqual(warnings('__proto__: {x: 1}'), [`${ORIGIN}: __proto__: unknown key, ignored`]);
    assert.equal(message('__proto__: {x: 1}', true), `${ORIGIN}: __proto__: unknown key`);
    assert.deepEqual(warnings('storage: {__proto__: {files: 1}}'), [`${ORIGIN}: storage.__proto__: unknown key, ignored`]);
    assert.equal(message('storage: {__proto__: {files: 1}}', true), `${ORIGIN}: storage.__proto__: unknown key`);
    assertPrototypeClean();
  });

  it('Container Linux Config: constructor and prototype in translated sections', () => {
    const text = 'constructor: 1\nignition: {constructor: {x: 1}, config: {prototype: 1}}\nsystemd: {units: [{name: a.service, __proto__: {enabled: true}}]}\npasswd: {users: [{name: a, constructor: 1}]}\n';
    assert.deepEqual(warnings(text), [
      `${ORIGIN}: constructor: unknown key, ignored`,
      `${ORIGIN}: ignition.constructor: unknown key, ignored`,
      `${ORIGIN}: ignition.config.prototype: unknown key, ignored`,
      `${ORIGIN}: systemd.units[0].__proto__: unknown key, ignored`,
      `${ORIGIN}: passwd.users[0].constructor: unknown key, ignored`,
    ]);
    assertPrototypeClean();
  });

  it('Butane: __proto__, constructor and prototype keys, and variant/version named like prototype members', () => {
    assert.equal(message('variant: fcos\nversion: 1.4.0\n__proto__: {storage: 1}\n'), `${ORIGIN}: __proto__: unknown key`);
    assert.equal(message('variant: fcos\nversion: 1.4.0\nstorage:\n  constructor: 1\n  files: [{path: /etc/a, prototype: 1}]\n'), all('storage.constructor: unknown key', 'storage.files[0].prototype: unknown key'));
    assert.deepEqual(warnings('variant: fcos\nversion: 1.4.0\n__proto__: {storage: 1}\n', false), [`${ORIGIN}: __proto__: unknown key, ignored`]);
    assert.equal(message('variant: constructor\nversion: name\n'), `${ORIGIN}: variant: must be fcos or flatcar (Butane variants bootwright translates)`);
    assert.equal(message('variant: fcos\nversion: constructor\n'), `${ORIGIN}: version: must be one of 1.0.0, 1.1.0, 1.2.0, 1.3.0, 1.4.0, 1.5.0, 1.6.0, 1.7.0 for variant fcos`);
    assertPrototypeClean();
  });

  it('raw Ignition JSON: __proto__ at the top and in nested objects', () => {
    const text = '{"ignition": {"version": "3.0.0", "__proto__": {"x": 1}}, "__proto__": {"storage": 1}, "storage": {"files": [{"path": "/etc/a", "constructor": 1}]}}';
    assert.equal(message(text), all('__proto__: unknown key', 'ignition.__proto__: unknown key', 'storage.files[0].constructor: unknown key'));
    assert.deepEqual(warnings(text, false), [
      `${ORIGIN}: __proto__: unknown key, ignored`,
      `${ORIGIN}: ignition.__proto__: unknown key, ignored`,
      `${ORIGIN}: storage.files[0].constructor: unknown key, ignored`,
    ]);
    assertPrototypeClean();
  });

  it('a whole request with a __proto__ key is a 422 RequestError, not an internal error', () => {
    const req = validateNodeBootstrap(worker({ provisioning: { ignition: { containerLinuxConfig: { additionalConfig: '__proto__: {x: 1}', strict: true } } } }));
    const e = requestError(() => renderNodeBootstrap(req, { format: 'ignition' }));
    assert.equal(e.message, `${ORIGIN}: __proto__: unknown key`);
  });
});
