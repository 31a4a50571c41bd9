/**
 * The status page in a real browser (issue 14): Debian's Chromium driven by
 * playwright-core, headless, loopback only. Signs in with a token, watches a machine go
 * Registered → Booting → Provisioning → Joined live (no reload) while the test makes its
 * real /ipxe and NoCloud fetches over HTTP and sends a real report to the URL taken from
 * the served config, enrols a discovered machine through the page's form, and saves a
 * screenshot (.tmp/artifacts/ui.png, printed).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { REPORT_SCRIPT } from '../../src/provision/plan/report.js';
import { cloudConfigFiles } from '../support/decode.js';
import { missingDependency } from '../support/missing.js';
import { example } from '../support/requests.js';
import { ADMIN, READER, testService, type TestService } from '../support/server.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : missingDependency(`${CHROMIUM} not found (apt-get install chromium): the /ui page is not tested in a browser`);
const API = 'bootwright.dev/v1alpha1';
const ARTIFACTS = new URL('../../.tmp/artifacts/', import.meta.url);

let svc: TestService | undefined;
let browser: Browser | undefined;
let base: string;
const dir = mkdtempSync(join(tmpdir(), 'bootwright-ui-'));

const api = async (method: string, path: string, body?: unknown, token = ADMIN) => {
  const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.text()) };
};

before(async () => {
  if (skip) return;
  svc = await testService({ dataDir: join(dir, 'data') });
  await svc.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  const cluster = { ...(example('init').spec as { cluster: Record<string, unknown> }).cluster, name: 'prod' };
  for (const [kind, collection, name, spec] of [
    ['Cluster', 'clusters', 'prod', cluster],
    ['Profile', 'profiles', 'cc', { role: 'worker', kubernetesVersion: 'v1.33.2', boot: { kernel: 'http://images.example.com/vmlinuz', args: ['console=ttyS0'] } }],
    ['Machine', 'machines', 'node-ui', { selectors: { mac: ['52:54:00:14:01:01'] }, cluster: 'prod', profile: 'cc', maxFetches: 3 }],
  ] as const) {
    const res = await api('POST', `/v1/${collection}`, { apiVersion: API, kind, metadata: { name }, spec });
    assert.equal(res.status, 201, res.body);
  }
  // An unknown machine boots: it is discovered.
  await fetch(`${base}/ipxe?mac=52:54:00:14:01:99&hostname=rack7-u12`);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run'] });
});
after(async () => {
  await browser?.close();
  await svc?.app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sign in with `token` through the page's form: the session cookie (`name=value`). */
async function signIn(token: string): Promise<string> {
  const res = await fetch(`${base}/ui/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${encodeURIComponent(token)}` });
  assert.equal(res.status, 303);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

describe('/ui in Chromium', { skip }, () => {
  it('signs in, shows a machine go Registered → Joined live, enrols a discovered machine, saves a screenshot', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      // The sign-in pages are 401s, as they should be; anything else is a problem (CSP, script, markup).
      if (m.type() === 'error' && !m.text().includes('status of 401')) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    // Loopback only: anything else the page asks for is refused and counted.
    await context.route(/^(?!http:\/\/127\.0\.0\.1:)/, (route) => {
      problems.push(`off-loopback request ${route.request().url()}`);
      return route.abort();
    });

    const signIn = await page.goto(`${base}/ui`);
    assert.equal(signIn!.status(), 401);
    assert.match(signIn!.headers()['content-security-policy'] ?? '', /default-src 'none'; style-src 'nonce-/);
    await page.getByLabel('Bearer token').fill('not-a-known-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').getByText('not known').waitFor();
    await page.getByLabel('Bearer token').fill(ADMIN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Machines', exact: true }).waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === 'bootwright_ui')!;
    assert.deepEqual([cookie.httpOnly, cookie.sameSite, cookie.path], [true, 'Strict', '/ui']);
    assert.ok(!cookie.value.includes(ADMIN), 'the cookie holds a session, not the API token');
    assert.ok(cookie.expires > Date.now() / 1000 && cookie.expires <= Date.now() / 1000 + 12 * 3600 + 5, 'it lasts BOOTWRIGHT_UI_SESSION_SECONDS');

    const phase = page.locator('#phase-node-ui');
    assert.equal(await phase.textContent(), 'Registered');
    // Every visible control has a label.
    const unlabelled = await page.locator('input:not([type=hidden]), select').evaluateAll((els) => els.filter((e) => ((e as unknown as { labels?: { length: number } }).labels?.length ?? 0) === 0).length);
    assert.equal(unlabelled, 0);

    // The machine boots: real fetches, the page updates itself (no reload).
    const script = await (await fetch(`${base}/ipxe?mac=52:54:00:14:01:01`)).text();
    await phase.filter({ hasText: /^Booting$/ }).waitFor({ timeout: 10_000 });
    const userData = await (await fetch(`${/ds=nocloud(?:-net)?;s=(\S+)/.exec(script)![1]!}user-data`)).text();
    await phase.filter({ hasText: /^Provisioning$/ }).waitFor({ timeout: 10_000 });
    const reportUrl = /'(http:\/\/[^']+\/report\?[^']+)'/.exec(cloudConfigFiles(userData).get(REPORT_SCRIPT)!.toString('utf8'))![1]!;
    const report = await fetch(reportUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'outcome=success&exitCode=0&output=This+node+has+joined+the+cluster' });
    assert.equal(report.status, 204);
    await phase.filter({ hasText: /^Joined$/ }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-count="Joined"]').textContent(), '1');

    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = new URL('ui.png', ARTIFACTS).pathname;
    await page.screenshot({ path: shot, fullPage: true });
    process.stdout.write(`# screenshot: ${shot}\n`);

    // The machine's timeline.
    await page.getByRole('link', { name: 'node-ui' }).click();
    await page.getByRole('heading', { name: 'Last boot report' }).waitFor();
    assert.match((await page.locator('pre').textContent()) ?? '', /This node has joined the cluster/);
    // Its one user-data fetch is counted; the page's button resets the count.
    assert.equal(await page.locator('#fetches').innerText(), 'Fetches: 1 of at most 3 Reset fetches');
    await page.getByRole('button', { name: 'Reset fetches' }).click();
    await page.locator('#fetches').filter({ hasText: /^Fetches: 0 of at most 3/ }).waitFor();
    await page.getByRole('link', { name: 'bootwright' }).click();

    // Enrol the discovered machine through the page's form.
    await page.getByLabel('Name').first().fill('rack7-u12');
    await page.getByLabel('Cluster', { exact: true }).last().selectOption('prod');
    await page.getByLabel('Profile').first().selectOption('cc');
    await page.getByRole('button', { name: 'Enrol' }).first().click();
    await page.getByRole('heading', { name: /Machine rack7-u12/ }).waitFor();
    const enrolled = await api('GET', '/v1/machines/rack7-u12', undefined, READER);
    assert.equal(enrolled.status, 200, enrolled.body);
    assert.deepEqual((JSON.parse(enrolled.body) as { spec: { selectors: unknown } }).spec.selectors, { mac: ['52:54:00:14:01:99'], labels: {} }, 'the hardware identity, not the host name');
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("shows a machine's identity as iPXE reported it, its labels and relative times; deletes it and dismisses a discovered one; an HTML 404", async () => {
    const made = await api('POST', '/v1/machines', { apiVersion: API, kind: 'Machine', metadata: { name: 'node-id', labels: { rack: 'r7', role: 'worker' } }, spec: { selectors: { mac: ['52:54:00:14:01:02'] }, cluster: 'prod', profile: 'cc' } });
    assert.equal(made.status, 201, made.body);
    // The firmware's own query, as /boot.ipxe makes iPXE send it (src/boot/ipxe.ts).
    await fetch(`${base}/ipxe?mac=52-54-00-14-01-02&uuid=4C4C4544-0042-3510-8052-B4C04F4E3232&serial_hex=${Buffer.from('SN-7').toString('hex')}&buildarch=x86_64&platform=efi`);
    await fetch(`${base}/ipxe?mac=52:54:00:14:01:98`);
    const context = await browser!.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${base}/ui`);
    await page.getByLabel('Bearer token').fill(ADMIN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Machines', exact: true }).waitFor();
    const row = page.getByRole('row', { name: /node-id/ });
    assert.match(await row.innerText(), /rack=r7, role=worker/);
    assert.match((await row.locator('time').innerText()).trim(), /^\d+s ago$/);
    assert.match((await row.locator('time').getAttribute('datetime')) ?? '', /^\d{4}-\d\d-\d\dT/);

    // Dismiss the discovered machine that is not ours.
    const stranger = page.getByRole('row', { name: /52:54:00:14:01:98/ });
    await stranger.getByRole('button', { name: 'Dismiss' }).click();
    await page.getByRole('heading', { name: 'Machines', exact: true }).waitFor();
    assert.equal(await page.getByRole('row', { name: /52:54:00:14:01:98/ }).count(), 0);
    assert.ok(!(await api('GET', '/v1/discovered', undefined, READER)).body.includes('52:54:00:14:01:98'));

    await page.getByRole('link', { name: 'node-id' }).click();
    await page.getByRole('heading', { name: /Machine node-id/ }).waitFor();
    const facts = await page.locator('dl').innerText();
    assert.match(facts, /Labels\s+rack=r7, role=worker/);
    assert.match(facts, /Selected by\s+MAC 52:54:00:14:01:02/);
    assert.match(facts, /Reported by iPXE at its latest boot\s+MAC 52:54:00:14:01:02, UUID 4c4c4544-0042-3510-8052-b4c04f4e3232, serial SN-7, arch x86_64, firmware efi, from 127\.0\.0\.1/);
    // The API reports the same facts.
    assert.deepEqual((JSON.parse((await api('GET', '/v1/machines/node-id', undefined, READER)).body) as { status: { firmware: unknown } }).status.firmware, {
      mac: '52:54:00:14:01:02',
      uuid: '4c4c4544-0042-3510-8052-b4c04f4e3232',
      serial: 'SN-7',
      buildarch: 'x86_64',
      platform: 'efi',
      client: '127.0.0.1',
    });

    // Delete: the box must be ticked (the browser keeps the form until it is).
    await page.getByRole('button', { name: 'Delete machine' }).click();
    assert.match(page.url(), /\/ui\/machines\/node-id$/);
    await page.getByLabel(/Delete machine node-id/).check();
    await page.getByRole('button', { name: 'Delete machine' }).click();
    await page.getByRole('heading', { name: 'Machines', exact: true }).waitFor();
    assert.equal((await api('GET', '/v1/machines/node-id', undefined, READER)).status, 404);

    // Gone, and a path that never was: pages, not problem documents.
    const gone = await page.goto(`${base}/ui/machines/node-id`);
    assert.equal(gone!.status(), 404);
    assert.match(gone!.headers()['content-type'] ?? '', /^text\/html/);
    assert.match(gone!.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    await page.getByRole('alert').getByText('No machine is named node-id.').waitFor();
    const nowhere = await page.goto(`${base}/ui/nowhere?x=1`);
    assert.equal(nowhere!.status(), 404);
    await page.getByRole('alert').getByText('There is no page at /ui/nowhere.').waitFor();
    await page.getByRole('link', { name: 'Back to the fleet' }).click();
    await page.getByRole('heading', { name: 'Machines', exact: true }).waitFor();
    assert.deepEqual(problems, []);
    await context.close();

    // Without the box ticked the service refuses too; a read-only token sees neither action.
    const cookie = await signIn(ADMIN);
    const own = /name="csrf" value="([^"]+)"/.exec(await (await fetch(`${base}/ui/machines/node-ui`, { headers: { cookie } })).text())![1]!;
    const unticked = await fetch(`${base}/ui/machines/node-ui/delete`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: `csrf=${encodeURIComponent(own)}` });
    assert.equal(unticked.status, 422);
    assert.equal((await api('GET', '/v1/machines/node-ui', undefined, READER)).status, 200);
    const reader = await signIn(READER);
    const readOnly = await (await fetch(`${base}/ui/machines/node-ui`, { headers: { cookie: reader } })).text();
    assert.ok(!readOnly.includes('Delete machine') && !(await (await fetch(`${base}/ui`, { headers: { cookie: reader } })).text()).includes('>Dismiss<'));
    const refused = await fetch(`${base}/ui/machines/node-ui/delete`, { method: 'POST', redirect: 'manual', headers: { cookie: reader, 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=x&confirm=yes' });
    assert.equal(refused.status, 403);
  });

  it('refuses an enrol without the form token, from another origin, or with a read-only token', async () => {
    const form = async (token: string, extra: Record<string, string> = {}) =>
      fetch(`${base}/ui/enrol`, { method: 'POST', redirect: 'manual', headers: { cookie: await signIn(token), 'content-type': 'application/x-www-form-urlencoded', ...extra }, body: 'csrf=x&name=n1&cluster=prod&profile=cc&mac=52:54:00:14:01:77' });
    assert.equal((await form(ADMIN)).status, 403);
    assert.equal((await form(ADMIN, { origin: 'http://evil.example' })).status, 403);
    assert.equal((await form(READER)).status, 403);
    assert.equal((await api('GET', '/v1/machines/n1')).status, 404);
    // Resetting fetches: the form token and the write scope, as the API's DELETE.
    const reset = async (token: string, csrf?: string) => {
      const cookie = await signIn(token);
      const page = await (await fetch(`${base}/ui/machines/node-ui`, { headers: { cookie } })).text();
      const own = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
      const res = await fetch(`${base}/ui/machines/node-ui/reset-fetches`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: `csrf=${encodeURIComponent(csrf ?? own)}` });
      return { status: res.status, button: page.includes('Reset fetches') };
    };
    assert.deepEqual(await reset(READER), { status: 403, button: false });
    assert.deepEqual(await reset(ADMIN, 'x'), { status: 403, button: true });
    const anonymous = await fetch(`${base}/ui/state.json`);
    assert.equal(anonymous.status, 401);
  });

  it('a session cookie, not the token: a cookie holding the token is no session, and each sign-in has its own form token', async () => {
    const raw = await fetch(`${base}/ui`, { headers: { cookie: `bootwright_ui=${ADMIN}` } });
    assert.equal(raw.status, 401, 'a 0.2.0 cookie (the raw token) signs nobody in');
    const csrfOf = async (cookie: string) => /name="csrf" value="([^"]+)"/.exec(await (await fetch(`${base}/ui`, { headers: { cookie } })).text())?.[1];
    const [a, b] = [await signIn(ADMIN), await signIn(ADMIN)];
    assert.notEqual(a, b);
    const [csrfA, csrfB] = [await csrfOf(a), await csrfOf(b)];
    assert.ok(csrfA && csrfB && csrfA !== csrfB, 'the form token rotates with the session');
    // A's form token does not act for B's session.
    const crossed = await fetch(`${base}/ui/logout`, { method: 'POST', redirect: 'manual', headers: { cookie: b, 'content-type': 'application/x-www-form-urlencoded' }, body: `csrf=${encodeURIComponent(csrfA)}` });
    assert.equal(crossed.status, 403);
  });

  it('refuses a sign-out without the form token while signed in (another site cannot sign an operator out)', async () => {
    const cookie = await signIn(ADMIN);
    const logout = (body: string) => fetch(`${base}/ui/logout`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body });
    const refused = await logout('csrf=x');
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('set-cookie'), null, 'the session is kept');
    assert.equal((await logout('')).status, 403);
    // The page's own form carries it.
    const page = await (await fetch(`${base}/ui`, { headers: { cookie } })).text();
    const csrf = /action="\/ui\/logout"><input type="hidden" name="csrf" value="([^"]+)"/.exec(page)?.[1];
    assert.ok(csrf, 'the sign-out form has a token');
    const ok = await logout(`csrf=${encodeURIComponent(csrf)}`);
    assert.equal(ok.status, 303);
    assert.match(ok.headers.get('set-cookie') ?? '', /Max-Age=0/);
  });
});
