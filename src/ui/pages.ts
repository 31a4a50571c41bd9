/**
 * The status page's documents (issue 14): server-rendered, semantic HTML that works
 * without JavaScript; one small inline script (CSP nonce) polls `/ui/state.json` and
 * updates the phase counts and the table's phase cells. Every value goes through
 * {@link html}, which escapes it.
 */
import type { AuditEntry, DiscoveredMachine } from '../store/store.js';
import type { StoredResource } from '../store/resources.js';
import { PHASES, type FleetCounts, type MachineStatus, type Phase } from '../store/status.js';
import { age } from '../kube/duration.js';
import { type Html, html, raw } from './html.js';

/** A time as the page shows it: how long ago, as kubectl prints ages, with the ISO 8601 time in `datetime` and as its tooltip. */
const when = (iso: string, now: Date) => html`<time datetime="${iso}" title="${iso}">${age(iso, now)} ago</time>`;

/** `k=v, k2=v2` of labels in key order, or an empty string. */
const labelText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');

/** The inline style sheet: system fonts, WCAG AA contrast (text ≥ 4.5:1 on its background). */
const STYLE = `
body{font-family:system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fff;line-height:1.4}
header,main{padding:0 1.5rem}header{display:flex;justify-content:space-between;align-items:center;border-bottom:1px solid #767676}
h1{font-size:1.4rem}table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #767676;padding:.25rem .5rem;text-align:left;vertical-align:top}
.counts{display:flex;gap:1rem;list-style:none;padding:0;flex-wrap:wrap}.counts li{border:1px solid #767676;padding:.5rem 1rem}
.counts strong{display:block;font-size:1.5rem}.phase{font-weight:600;padding:0 .3rem}
.Joined{color:#0b6e2e}.Failed,.Stalled{color:#a4000f}.Booting,.Provisioning{color:#0b4f9c}.Registered{color:#4a4a4a}
form.inline{display:inline}fieldset{border:1px solid #767676;margin:0 0 1rem}label{margin-right:.25rem}
input,select,button{font:inherit;margin-right:.75rem}button{padding:.1rem .6rem}
a{color:#0b4f9c}pre{background:#f2f2f2;padding:.5rem;overflow:auto;max-width:60rem}.error{color:#a4000f;font-weight:600}
`;

/**
 * The live-update script: every 2 s fetch `/ui/state.json` with the page's query (same
 * origin, cookie credentials) and put the counts and phases in place. Without it the
 * page is the same, as of its load.
 */
const SCRIPT = `
(function(){var q=location.search;function tick(){fetch('/ui/state.json'+q,{credentials:'same-origin',headers:{accept:'application/json'}}).then(function(r){return r.ok?r.json():null}).then(function(s){if(!s)return;
Object.keys(s.phases).forEach(function(p){var e=document.querySelector('[data-count="'+p+'"]');if(e)e.textContent=String(s.phases[p])});
var m=document.querySelector('[data-count="machines"]');if(m)m.textContent=String(s.machines);
Object.keys(s.rows).forEach(function(n){var c=document.getElementById('phase-'+n);if(c&&c.textContent!==s.rows[n]){c.textContent=s.rows[n];c.className='phase '+s.rows[n]}});
var t=document.getElementById('updated');if(t)t.textContent=new Date().toLocaleTimeString()}).catch(function(){})}setInterval(tick,2000)})();
`;

/** A whole document: title, header (with a sign-out form when signed in), main content. */
export function page(title: string, nonce: string, body: Html, options: { signedIn?: boolean; script?: boolean; csrf?: string } = {}): string {
  return html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · bootwright</title><style nonce="${nonce}">${raw(STYLE)}</style></head>
<body>
<header><h1><a href="/ui">bootwright</a> · ${title}</h1>${
    options.signedIn
      ? html`<form class="inline" method="post" action="/ui/logout"><input type="hidden" name="csrf" value="${options.csrf ?? ''}"><button type="submit">Sign out</button></form>`
      : ''
  }</header>
<main>${body}</main>
${options.script ? html`<script nonce="${nonce}">${raw(SCRIPT)}</script>` : ''}
</body>
</html>
`.text;
}

/** The sign-in form: a token (read scope at least), kept in an HttpOnly cookie. */
export function loginBody(error?: string): Html {
  return html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/ui/login">
<p><label for="token">Bearer token</label><input id="token" name="token" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>
<p>The token is kept in a cookie for this page only (HttpOnly, SameSite=Strict). A token with the read scope shows the fleet; enrolling needs the write and render scopes.</p>`;
}

/** A machine row as the page shows it. */
export interface MachineRow {
  machine: StoredResource<{ cluster: string; profile: string }>;
  status: MachineStatus;
}

/** The filter values of the machine table (plain GET form). */
export interface Filters {
  phase?: string;
  label?: string;
  cluster?: string;
}

const phaseBadge = (id: string | undefined, phase: Phase) => html`<span class="phase ${phase}"${id ? html` id="${id}"` : ''}>${phase}</span>`;

/** `MAC aa:…, UUID …` of the identity fields that are set. */
const identityText = (i: { mac?: string | readonly string[]; uuid?: string; serial?: string; hostname?: string; buildarch?: string; platform?: string; client?: string }) =>
  [
    i.mac !== undefined && i.mac.length > 0 && `MAC ${typeof i.mac === 'string' ? i.mac : i.mac.join(', ')}`,
    i.uuid && `UUID ${i.uuid}`,
    i.serial && `serial ${i.serial}`,
    i.hostname && `host ${i.hostname}`,
    i.buildarch && `arch ${i.buildarch}`,
    i.platform && `firmware ${i.platform}`,
    i.client && `from ${i.client}`,
  ]
    .filter(Boolean)
    .join(', ');

/** The fleet page: counts by phase, the filter form, the machine table, the discovered machines (with enrol forms when allowed). */
export function fleetBody(input: {
  fleet: FleetCounts;
  rows: MachineRow[];
  filters: Filters;
  clusters: string[];
  profiles: string[];
  discovered: DiscoveredMachine[];
  canEnrol: boolean;
  /** The token has the `write` scope (dismiss a discovered machine). */
  canWrite: boolean;
  csrf: string;
  now: Date;
  next?: string;
  /** The next page of discovered machines, when this one is full. */
  discoveredNext?: string;
}): Html {
  const { fleet, rows, filters } = input;
  const discovered = input.discovered.map((d, i) => {
    const identity = identityText(d);
    const suggested = (d.hostname ?? (d.mac ? `m-${d.mac.replaceAll(':', '')}` : `m-${i}`)).toLowerCase().replace(/[^a-z0-9-]/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || `m-${i}`;
    const dismiss = input.canWrite
      ? html`<form class="inline" method="post" action="/ui/discovered/${d.id}/dismiss"><input type="hidden" name="csrf" value="${input.csrf}"><button type="submit">Dismiss</button></form>`
      : '';
    return html`<tr><td>${identity}</td><td>${d.why ?? ''}</td><td>${when(d.lastSeen, input.now)}</td><td>${d.count}</td><td>${dismiss}</td><td>${
      input.canEnrol
        ? html`<form method="post" action="/ui/enrol">
<input type="hidden" name="csrf" value="${input.csrf}">${(['mac', 'uuid', 'serial', 'hostname'] as const).map((k) => (d[k] !== undefined ? html`<input type="hidden" name="${k}" value="${d[k]}">` : ''))}
<label for="name-${i}">Name</label><input id="name-${i}" name="name" value="${suggested}" required pattern="[a-z0-9]([a-z0-9\\-]{0,61}[a-z0-9])?" title="a DNS-1123 label: lower-case letters, digits and hyphens">
<label for="cluster-${i}">Cluster</label><select id="cluster-${i}" name="cluster" required>${input.clusters.map((c) => html`<option>${c}</option>`)}</select>
<label for="profile-${i}">Profile</label><select id="profile-${i}" name="profile" required>${input.profiles.map((p) => html`<option>${p}</option>`)}</select>
<button type="submit">Enrol</button></form>`
        : 'enrolling needs the write and render scopes'
    }</td></tr>`;
  });
  return html`<section aria-labelledby="fleet-h"><h2 id="fleet-h">Fleet</h2>
<ul class="counts"><li>Machines<strong data-count="machines">${fleet.machines}</strong></li>${PHASES.map(
    (p) => html`<li><span class="phase ${p}">${p}</span><strong data-count="${p}">${fleet.phases[p]}</strong></li>`,
  )}<li>Discovered<strong>${fleet.discovered}</strong></li></ul>
<p>Updated <span id="updated">at load</span> (live every 2 s with JavaScript; reload otherwise).</p></section>
<section aria-labelledby="machines-h"><h2 id="machines-h">Machines</h2>
<form method="get" action="/ui"><fieldset><legend>Filter</legend>
<label for="f-phase">Phase</label><select id="f-phase" name="phase"><option value="">any</option>${PHASES.map((p) => html`<option${filters.phase === p ? raw(' selected') : ''}>${p}</option>`)}</select>
<label for="f-label">Label selector</label><input id="f-label" name="label" value="${filters.label ?? ''}" placeholder="rack=r7">
<label for="f-cluster">Cluster</label><select id="f-cluster" name="cluster"><option value="">any</option>${input.clusters.map((c) => html`<option${filters.cluster === c ? raw(' selected') : ''}>${c}</option>`)}</select>
<button type="submit">Apply</button></fieldset></form>
<table><caption>Machines${filters.phase || filters.label || filters.cluster ? ' (filtered)' : ''}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Phase</th><th scope="col">Cluster</th><th scope="col">Profile</th><th scope="col">Labels</th><th scope="col">Revision</th><th scope="col">Last change</th></tr></thead>
<tbody>${rows.map(
    ({ machine, status }) =>
      html`<tr><th scope="row"><a href="/ui/machines/${machine.name}">${machine.name}</a></th><td>${phaseBadge(`phase-${machine.name}`, status.phase)}</td><td>${machine.spec.cluster}</td><td>${machine.spec.profile}</td><td>${labelText(machine.labels)}</td><td>${machine.revision}</td><td>${when(status.transitions.at(-1)?.time ?? machine.updatedAt, input.now)}</td></tr>`,
  )}</tbody></table>${rows.length === 0 ? html`<p>No machine matches.</p>` : ''}${input.next ? html`<p><a href="${input.next}">Next page</a></p>` : ''}</section>
<section aria-labelledby="discovered-h"><h2 id="discovered-h">Discovered machines</h2>
${input.discovered.length === 0 ? html`<p>None: every machine that booted matched a registration.</p>` : html`<table><caption>Booted without matching a machine, most recent first</caption>
<thead><tr><th scope="col">Identity</th><th scope="col">Why no machine matched</th><th scope="col">Last seen</th><th scope="col">Sightings</th><th scope="col">Dismiss</th><th scope="col">Enrol</th></tr></thead><tbody>${discovered}</tbody></table>`}${
    input.discoveredNext ? html`<p><a href="${input.discoveredNext}">Next page of discovered machines</a></p>` : ''
  }</section>`;
}

/** What a machine's page may offer: the session's form token and whether it may write. */
export interface MachineActions {
  csrf: string;
  /** The session's token has the `write` scope (reset fetches). */
  canWrite: boolean;
  /** Secret-bearing fetches counted against `maxFetches` since the last reset (counted only for a machine with a limit). */
  fetchCount: number;
  now: Date;
}


/** A machine's page: its status, fetch count (with a reset form when allowed), timeline (transitions, fetches and reports from the audit log) and revisions. */
export function machineBody(
  machine: StoredResource<{ cluster: string; profile: string; maxFetches?: number; selectors: { mac: string[]; uuid?: string; serial?: string; hostname?: string } }>,
  status: MachineStatus,
  audit: AuditEntry[],
  revisions: StoredResource[],
  actions: MachineActions,
): Html {
  const report = status.lastReport;
  const limit = machine.spec.maxFetches;
  const { now } = actions;
  const fw = status.firmware;
  return html`<p>Phase ${phaseBadge(`phase-${machine.name}`, status.phase)} · cluster ${machine.spec.cluster} · profile ${machine.spec.profile} · revision ${machine.revision}</p>
<dl><dt>Labels</dt><dd>${labelText(machine.labels) || 'none'}</dd>
<dt>Selected by</dt><dd>${identityText(machine.spec.selectors) || 'no hardware selector'}</dd>
<dt>Reported by iPXE at its latest boot</dt><dd>${fw ? identityText(fw) || 'nothing' : 'not booted since this was recorded'}</dd></dl>
<div id="fetches">${
    limit === undefined
      ? 'Fetches: not limited (no maxFetches)'
      : html`Fetches: ${actions.fetchCount} of at most ${limit}${
          actions.canWrite
            ? html` <form class="inline" method="post" action="/ui/machines/${machine.name}/reset-fetches"><input type="hidden" name="csrf" value="${actions.csrf}"><button type="submit">Reset fetches</button></form>`
            : ''
        }`
  }</div>
${status.served ? html`<p>Last served: revision ${status.served.revision}, ${status.served.format}${status.served.ignitionVersion ? ` ${status.served.ignitionVersion}` : ''}, sha256 <code>${status.served.sha256}</code>, ${when(status.served.time, now)}</p>` : ''}
${report ? html`<section aria-labelledby="report-h"><h2 id="report-h">Last boot report</h2><p>${report.outcome}, exit code ${report.exitCode ?? 'unknown'}, ${when(report.time, now)}</p><pre>${report.output}</pre></section>` : ''}
<section aria-labelledby="timeline-h"><h2 id="timeline-h">Timeline</h2>
<table><caption>Phase changes, oldest first</caption><thead><tr><th scope="col">Time</th><th scope="col">Phase</th></tr></thead>
<tbody>${status.transitions.map((t) => html`<tr><td>${when(t.time, now)}</td><td>${phaseBadge(undefined, t.phase)}</td></tr>`)}</tbody></table>
<table><caption>Fetches and reports (audit log), newest first</caption><thead><tr><th scope="col">Time</th><th scope="col">Route</th><th scope="col">Status</th><th scope="col">Client</th><th scope="col">User agent</th><th scope="col">Details</th></tr></thead>
<tbody>${audit.map(
    (a) =>
      html`<tr><td>${when(a.at, now)}</td><td>${a.route}</td><td>${a.status}</td><td>${a.client}</td><td>${a.userAgent ?? ''}</td><td>${[
        a.repeats !== undefined && `${a.repeats} identical answers${a.lastAt ? `, the last ${age(a.lastAt, now)} ago` : ''}`,
        a.outcome && `outcome ${a.outcome}`,
        a.reason,
        a.revision !== undefined && `revision ${a.revision}`,
        a.format && `${a.format}${a.ignitionVersion ? ` ${a.ignitionVersion}` : ''}`,
        a.sha256 && `sha256 ${a.sha256.slice(0, 16)}…`,
      ]
        .filter(Boolean)
        .join('; ')}</td></tr>`,
  )}</tbody></table>
<table><caption>Revisions</caption><thead><tr><th scope="col">Revision</th><th scope="col">Written</th><th scope="col">Cluster, profile revisions</th></tr></thead>
<tbody>${revisions.map((r) => html`<tr><td>${r.revision}</td><td>${when(r.updatedAt, now)}</td><td>${r.refs ? `${r.refs.clusterRevision}, ${r.refs.profileRevision}` : ''}</td></tr>`)}</tbody></table></section>
${
  actions.canWrite
    ? html`<section aria-labelledby="delete-h"><h2 id="delete-h">Delete</h2><form method="post" action="/ui/machines/${machine.name}/delete"><input type="hidden" name="csrf" value="${actions.csrf}">
<p><input type="checkbox" id="confirm-delete" name="confirm" value="yes" required><label for="confirm-delete">Delete machine ${machine.name}: it stops booting from this service (its revisions and audit log stay).</label></p>
<p><button type="submit">Delete machine</button></p></form></section>`
    : ''
}`;
}

/** The body of a page that does not exist (HTTP 404): what was asked for, and a way back. */
export function notFoundBody(what: string): Html {
  return html`<p class="error" role="alert">${what}</p><p><a href="/ui">Back to the fleet</a></p>`;
}

/** A short message page body (enrol refused, not allowed): the message, problems listed, a way back. */
export function messageBody(message: string, problems: { path: string; message: string }[] = []): Html {
  return html`<p class="error" role="alert">${message}</p>${problems.length ? html`<ul>${problems.map((p) => html`<li><code>${p.path}</code> ${p.message}</li>`)}</ul>` : ''}<p><a href="/ui">Back to the fleet</a></p>`;
}
