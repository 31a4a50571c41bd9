/**
 * Behind a reverse proxy that terminates TLS (BOOTWRIGHT_TRUSTED_PROXIES): from the
 * configured proxy, and only from it, X-Forwarded-For, -Proto and -Host say the client's
 * address, scheme and host. So the status page's forms work through it (their Origin is
 * the proxy's https origin), logs and audit rows name the client, and the same headers from any
 * other address change nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMIN, testService } from '../support/server.js';

const FORWARDED = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'boot.example', 'x-forwarded-for': '198.51.100.7' };

/** Sign-out with the page's own form token, through the proxy's origin, from `remoteAddress`. */
async function signOutThroughProxy(trustedProxies: string[], remoteAddress: string): Promise<number> {
  const svc = await testService({ trustedProxies });
  try {
    const login = await svc.app.inject({ method: 'POST', url: '/ui/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${ADMIN}` });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const page = await svc.app.inject({ url: '/ui', headers: { cookie, ...FORWARDED }, remoteAddress });
    const csrf = /action="\/ui\/logout"><input type="hidden" name="csrf" value="([^"]+)"/.exec(page.body)?.[1];
    assert.ok(csrf, page.body.slice(0, 300));
    const res = await svc.app.inject({
      method: 'POST',
      url: '/ui/logout',
      headers: { cookie, origin: 'https://boot.example', 'content-type': 'application/x-www-form-urlencoded', ...FORWARDED },
      payload: `csrf=${encodeURIComponent(csrf)}`,
      remoteAddress,
    });
    return res.statusCode;
  } finally {
    await svc.app.close();
  }
}

describe('BOOTWRIGHT_TRUSTED_PROXIES', () => {
  it("the status page's forms work through a trusted TLS-terminating proxy", async () => {
    assert.equal(await signOutThroughProxy(['127.0.0.1'], '127.0.0.1'), 303);
    assert.equal(await signOutThroughProxy(['10.0.0.0/8'], '10.1.2.3'), 303);
  });

  it('without it, or from another address, the forwarded headers change nothing (the form is refused as cross-origin)', async () => {
    assert.equal(await signOutThroughProxy([], '127.0.0.1'), 403);
    assert.equal(await signOutThroughProxy(['10.0.0.0/8'], '127.0.0.1'), 403);
  });

  it('the log names the client behind the proxy, not the proxy; scripts point back through it', async () => {
    const svc = await testService({ trustedProxies: ['127.0.0.1'] });
    try {
      const res = await svc.app.inject({ url: '/ipxe?mac=52-54-00-00-77-01', headers: FORWARDED, remoteAddress: '127.0.0.1' });
      assert.equal(res.statusCode, 200);
      assert.match(svc.logs(), /"remoteAddress":"198\.51\.100\.7"/);
      assert.doesNotMatch(svc.logs(), /"remoteAddress":"127\.0\.0\.1"/);
      assert.match(res.body, /https:\/\/boot\.example\//, 'the script points back through the proxy');
    } finally {
      await svc.app.close();
    }
  });

  it('a value that is no address or range is refused at start, naming the setting', async () => {
    await assert.rejects(testService({ trustedProxies: ['proxy.example'] }), /trustedProxies/);
  });
});
