/**
 * BOOTWRIGHT_ALLOWED_HOSTS against DNS rebinding (src/api/hosts.ts): a request naming
 * another host than the service's is a 421 on every route but the probes and metrics;
 * without the setting any Host is answered, as before.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostAllowed, hostOf } from '../../src/api/hosts.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ADMIN, testService } from '../support/server.js';

describe('allowed hosts', () => {
  it('the host of a Host header: port, brackets, case and a trailing dot dropped', () => {
    assert.equal(hostOf('Boot.Example:8080'), 'boot.example');
    assert.equal(hostOf('boot.example.'), 'boot.example');
    assert.equal(hostOf('[FD00::1]:8443'), 'fd00::1');
    assert.equal(hostOf('10.0.0.1'), '10.0.0.1');
    assert.equal(hostOf(''), undefined);
    const allowed = ['boot.example', '10.0.0.1', 'fd00::1', '*.rack.example'];
    for (const ok of ['boot.example', 'BOOT.example:80', '10.0.0.1:8080', '[fd00::1]:8080', 'a.rack.example', 'x.y.rack.example']) assert.ok(hostAllowed(ok, allowed), ok);
    for (const no of [undefined, '', 'rack.example', 'evilrack.example', 'boot.example.attacker.example', 'attacker.example', '10.0.0.10', 'boot.exampl']) assert.ok(!hostAllowed(no, allowed), String(no));
  });

  it('configured from the environment; an entry with a port or a path is refused naming the setting', () => {
    assert.deepEqual(loadConfig({ BOOTWRIGHT_ALLOWED_HOSTS: 'Boot.Example, 10.0.0.1,*.rack.example' }).allowedHosts, ['boot.example', '10.0.0.1', '*.rack.example']);
    for (const bad of ['boot.example:8080', 'http://boot.example', 'a b', '*']) {
      assert.throws(() => loadConfig({ BOOTWRIGHT_ALLOWED_HOSTS: bad }), (e: Error) => e instanceof ConfigError && e.message.startsWith('allowedHosts'), bad);
    }
  });

  it('421 for another Host on every route but /healthz, /readyz and /metrics; any Host without the setting', async () => {
    const svc = await testService({ allowedHosts: ['boot.example', '10.0.0.1'] });
    const open = await testService({});
    try {
      const get = (app: typeof svc.app, url: string, host: string) => app.inject({ url, headers: { host, authorization: `Bearer ${ADMIN}` } });
      for (const url of ['/boot.ipxe', '/ipxe?mac=52:54:00:00:00:01', '/v1/machines', '/ui', '/ca.crt']) {
        const misdirected = await get(svc.app, url, 'rebound.attacker.example');
        assert.equal(misdirected.statusCode, 421, url);
        assert.match(misdirected.headers['content-type'] as string, /^application\/problem\+json/);
        assert.match((JSON.parse(misdirected.body) as { detail: string }).detail, /BOOTWRIGHT_ALLOWED_HOSTS/);
        assert.notEqual((await get(open.app, url, 'rebound.attacker.example')).statusCode, 421, `${url} without the setting`);
      }
      assert.equal((await get(svc.app, '/boot.ipxe', 'boot.example:8080')).statusCode, 200);
      assert.equal((await get(svc.app, '/boot.ipxe', '10.0.0.1')).statusCode, 200);
      for (const url of ['/healthz', '/readyz', '/metrics']) assert.equal((await get(svc.app, url, '10.244.1.7:8080')).statusCode, 200, url);
    } finally {
      await svc.app.close();
      await open.app.close();
    }
  });
});
