/**
 * Status-page sessions (src/api/session.ts): the cookie names the token and never holds
 * it; a session ends at its expiry, when its token is replaced or removed, or when the
 * key changes; anything malformed is no session.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { TokenTable } from '../../src/api/auth.js';
import { issueSession, verifySession } from '../../src/api/session.js';

const TOKEN = 'ui-session-token-0123456789abcdef';
const table = (token: string) => new TokenTable([{ name: 'ops', token, scopes: ['read'] }]);

describe('status-page sessions', () => {
  it('names the token without holding it, and ends with its expiry, its token or its key', () => {
    const key = randomBytes(32);
    const tokens = table(TOKEN);
    const principal = tokens.authenticate(`Bearer ${TOKEN}`)!;
    const value = issueSession(key, tokens, principal, 600, 1_000_000);
    assert.ok(!value.includes(TOKEN) && !value.includes(Buffer.from(TOKEN).toString('base64url')));
    assert.equal(verifySession(key, tokens, value, 1_000_100)?.principal.name, 'ops');
    assert.equal(verifySession(key, tokens, value, 1_000_600), undefined, 'expired');
    assert.equal(verifySession(key, table('another-token-0123456789abcdef01'), value, 1_000_100), undefined, 'the token was replaced');
    assert.equal(verifySession(key, new TokenTable([]), value, 1_000_100), undefined, 'the token was removed');
    assert.equal(verifySession(randomBytes(32), tokens, value, 1_000_100), undefined, 'another key');
    const [sid, exp, name, mac] = value.split('.') as [string, string, string, string];
    for (const forged of [`${sid}.${Number(exp) + 1}.${name}.${mac}`, `${sid}.${exp}.${Buffer.from('admin').toString('base64url')}.${mac}`, `${sid}x.${exp}.${name}.${mac}`, TOKEN, '', '....']) {
      assert.equal(verifySession(key, tokens, forged, 1_000_100), undefined, forged);
    }
    assert.notEqual(issueSession(key, tokens, principal, 600, 1_000_000).split('.')[0], sid, 'a new id per sign-in');
  });
});
