import type { Mode } from '../../config/config';
import { iso } from '../../common/time';
import type { ApiKeyInfo, IssuedKey } from '../auth/api-key';
import type { Merchant } from '../merchants/merchant';
import { SCOPES } from '../auth/scopes';
import { html, type SafeHtml } from '../pages/html';
import type { RateRow } from '../rates/rates.service';
import { sourceForPartners } from '../rates/rate-provider';
import type { AuditEvent } from '../audit/audit';
import { WEBHOOK_UPDATES_PER_MINUTE } from '../webhooks/webhook-update-limiter';
import { badge, csrfInput, noticeBlock, postButton, when, type Notice } from './portal-layout.view';
import type { PortalSession } from './portal-sessions.service';
import type { AttemptView, DeliveryView, PingResult } from './portal.service';
import type { PortalUserInfo } from './portal-users.service';
import { PASSWORD_MAX, PASSWORD_MIN } from './password';
import { PINGS_PER_MINUTE } from './portal.service';
import { shownName } from '../../common/names';

/** The page bodies of the portal; portalDocument wraps them. Every value is escaped by `html`. */

function title(text: string, extra?: SafeHtml): SafeHtml {
  return html`<div class="page-title"><h1>${text}</h1>${extra ?? ''}</div>`;
}

const SCOPE_HINTS: Record<string, string> = {
  'requests:read': 'get and list payment requests',
  'requests:write': 'create and cancel payment requests',
  'merchants:read': 'get and list merchants',
  'merchants:write': 'create merchants',
};

const STATE_BADGE: Record<string, 'ok' | 'bad' | 'info' | 'muted' | 'warn'> = {
  delivered: 'ok',
  abandoned: 'bad',
  pending: 'info',
  delivering: 'info',
  skipped: 'muted',
};

const canRedeliver = (d: { state: string }) => d.state === 'delivered' || d.state === 'abandoned';

function modeBadge(testMode: boolean | Mode): SafeHtml {
  const test = testMode === true || testMode === 'test';
  return badge(test ? 'test' : 'live', test ? 'warn' : 'info');
}

// ---------------------------------------------------------------- sign-in

export function loginBody(p: { csrf: string; email?: string; notice?: Notice }): SafeHtml {
  return html`<section class="card">
<p class="eyebrow">Partner portal</p>
<h1>Sign in</h1>
${noticeBlock(p.notice, 'login-message')}
<form method="post" action="/portal/login">
<input type="hidden" name="_csrf" value="${p.csrf}">
<label for="email">Email</label>
<input type="email" id="email" name="email" autocomplete="username" required value="${p.email ?? ''}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit" class="button primary" id="sign-in">Sign in</button>
</form>
<p class="hint">Accounts are created by the service's operators. Ask them to reset a forgotten password.</p>
</section>`;
}

// ---------------------------------------------------------------- overview

export interface DashboardView {
  keys: ApiKeyInfo[];
  webhook: { url: string | null; enabled: boolean; rotationPending: boolean };
  deliveries: DeliveryView[];
  merchants: { test: number; live: number; testMore: boolean; liveMore: boolean };
  rates: RateRow[];
}

export function dashboardBody(s: PortalSession, v: DashboardView): SafeHtml {
  const active = v.keys.filter((k) => !k.revokedAt);
  const count = (n: number, more: boolean) => `${n}${more ? '+' : ''}`;
  return html`${title(`Welcome, ${s.partnerName}`)}
<p class="lead">Partner <code>${s.partnerSlug}</code> · signed in as ${s.email}</p>
<div class="grid cols-3">
<section class="card">
<h2><a href="/portal/keys">API keys</a></h2>
<p class="stat" id="active-keys">${active.length}</p>
<p class="stat-label">active: ${active.filter((k) => k.mode === 'test').length} test, ${active.filter((k) => k.mode === 'live').length} live</p>
</section>
<section class="card">
<h2><a href="/portal/webhook">Webhooks</a></h2>
<p class="stat">${v.webhook.enabled ? 'On' : 'Off'}</p>
<p class="stat-label">${v.webhook.url ?? 'No URL set yet'}${v.webhook.rotationPending ? ' · secret rotation waiting for confirmation' : ''}</p>
</section>
<section class="card">
<h2><a href="/portal/merchants">Merchants</a></h2>
<p class="stat">${count(v.merchants.test + v.merchants.live, v.merchants.testMore || v.merchants.liveMore)}</p>
<p class="stat-label">${count(v.merchants.test, v.merchants.testMore)} test, ${count(v.merchants.live, v.merchants.liveMore)} live</p>
</section>
</div>
<section class="card">
<h2>Latest deliveries</h2>
${v.deliveries.length ? deliveriesTable(s, v.deliveries, false) : html`<p class="muted">No webhook deliveries yet.</p>`}
<p><a href="/portal/deliveries">All deliveries</a></p>
</section>
<section class="card">
<h2>Rates</h2>
<p class="muted">${v.rates.map((r) => `${r.currency.toUpperCase()} ${r.rate}`).join(' · ')}</p>
<p><a href="/portal/rates">Rates and manual refresh</a></p>
</section>`;
}

// ---------------------------------------------------------------- API keys

export interface KeyForm {
  mode?: string;
  scopes?: string[];
  label?: string;
}

export function keysBody(s: PortalSession, keys: ApiKeyInfo[], o: { notice?: Notice; form?: KeyForm } = {}): SafeHtml {
  const mode = o.form?.mode ?? 'test';
  const scopes = o.form?.scopes ?? [...SCOPES];
  return html`${title('API keys')}
<p class="lead">Keys authenticate your server's calls to the API (<code>Authorization: Bearer &lt;key&gt;</code>). A test key reaches sandbox data only; a live key reaches real data.</p>
${noticeBlock(o.notice)}
<section class="card">
<h2>Create a key</h2>
<form method="post" action="/portal/keys" id="create-key-form">
${csrfInput(s)}
<fieldset>
<legend>Mode</legend>
<div class="choices">
<label class="check"><input type="radio" name="mode" value="test" id="mode-test"${mode === 'test' ? html` checked` : ''}> Test (sandbox)</label>
<label class="check"><input type="radio" name="mode" value="live" id="mode-live"${mode === 'live' ? html` checked` : ''}> Live</label>
</div>
</fieldset>
<fieldset>
<legend>Scopes</legend>
<div class="choices">
${SCOPES.map(
  (sc) => html`<label class="check"><input type="checkbox" name="scopes" value="${sc}" id="scope-${sc.replace(':', '-')}"${scopes.includes(sc) ? html` checked` : ''}>
<span><code>${sc}</code><br><span class="hint">${SCOPE_HINTS[sc]}</span></span></label>`,
)}
</div>
</fieldset>
<label for="key-label">Label <span class="muted">(optional)</span></label>
<input type="text" id="key-label" name="label" maxlength="100" value="${o.form?.label ?? ''}" aria-describedby="key-label-hint">
<p class="hint" id="key-label-hint">For your own reference, e.g. the server that uses the key.</p>
<button type="submit" class="button primary" id="create-key">Create key</button>
</form>
</section>
<section class="card">
<h2>Your keys</h2>
${keys.length === 0 ? html`<p class="muted">No keys yet.</p>` : keysTable(s, keys)}
</section>`;
}

function keysTable(s: PortalSession, keys: ApiKeyInfo[]): SafeHtml {
  return html`<p class="hint">Keys are listed by their first characters; the full key was shown once, when it was created.</p>
<div class="table-wrap"><table class="data" id="keys-table">
<thead><tr><th scope="col">Key</th><th scope="col">Label</th><th scope="col">Mode</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Status</th></tr></thead>
<tbody>
${keys.map(
  (k) => html`<tr data-key-id="${k.id}"${k.revokedAt ? html` class="revoked"` : ''}>
<td data-label="Key"><div class="cell"><code class="key-prefix">${k.displayPrefix}…</code></div></td>
<td data-label="Label"><div class="cell">${k.label ?? html`<span class="muted">—</span>`}</div></td>
<td data-label="Mode"><div class="cell">${modeBadge(k.mode)}</div></td>
<td data-label="Scopes"><div class="cell">${k.scopes.map((sc, i) => html`${i ? ', ' : ''}<code>${sc}</code>`)}</div></td>
<td data-label="Created"><div class="cell">${when(iso(k.createdAt))}</div></td>
<td data-label="Status"><div class="cell">${
    k.revokedAt
      ? html`${badge('revoked', 'bad')} ${when(iso(k.revokedAt))}`
      : html`${badge('active', 'ok')} ${postButton(s, `/portal/keys/${k.id}/revoke`, 'Revoke', { ariaLabel: `Revoke key ${k.displayPrefix}` })}`
  }</div></td>
</tr>`,
)}
</tbody>
</table></div>`;
}

export function keyCreatedBody(k: IssuedKey): SafeHtml {
  return html`${title('Your new API key')}
<div class="secret-box" role="status">
<p><strong>Copy this key now.</strong> It is shown only this once: the service keeps only a hash of it, and nobody can show it to you again.</p>
<label for="new-api-key">API key</label>
<input type="text" class="readonly-value" id="new-api-key" value="${k.apiKey}" readonly autocomplete="off" spellcheck="false">
</div>
<section class="card">
<dl class="kv">
<dt>Mode</dt><dd>${modeBadge(k.mode)}</dd>
<dt>Scopes</dt><dd>${k.scopes.join(', ')}</dd>
<dt>Label</dt><dd>${k.label ?? '—'}</dd>
<dt>Listed as</dt><dd><code>${k.displayPrefix}…</code></dd>
</dl>
</section>
<p><a href="/portal/keys" class="button secondary" id="back-to-keys">Back to API keys</a></p>`;
}

// ---------------------------------------------------------------- webhooks

export interface WebhookStatusView {
  url: string | null;
  enabled: boolean;
  enabledAt: Date | null;
  hasSecret: boolean;
  rotationPending: boolean;
}

export function webhookBody(
  s: PortalSession,
  w: WebhookStatusView,
  recent: DeliveryView[],
  o: { notice?: Notice; urlInput?: string; enabledInput?: boolean; ping?: PingResult } = {},
): SafeHtml {
  const url = o.urlInput ?? w.url ?? '';
  const enabled = o.enabledInput ?? w.enabled;
  return html`${title('Webhooks')}
<p class="lead">The service POSTs <code>payment.proof_attached</code> and <code>payment.proof_verified</code> events to one URL, signed with HMAC-SHA256 (header <code>x-service-signature</code>). Events of test and live merchants both go there; the payload's <code>test_mode</code> tells them apart.</p>
${noticeBlock(o.notice)}
${o.ping ? pingBlock(o.ping) : ''}
<section class="card">
<h2>Endpoint</h2>
<dl class="kv" id="webhook-status">
<dt>Events</dt><dd>${w.enabled ? html`${badge('enabled', 'ok')} since ${when(w.enabledAt?.toISOString())}` : badge('disabled', 'muted')}</dd>
<dt>Secret</dt><dd>${w.rotationPending ? badge('rotation waiting for confirmation', 'warn') : w.hasSecret ? badge('set', 'ok') : badge('not generated yet', 'muted')}</dd>
</dl>
<form method="post" action="/portal/webhook" id="webhook-form">
${csrfInput(s)}
<label for="webhook-url">URL</label>
<input type="url" id="webhook-url" name="url" value="${url}" placeholder="https://example.com/webhooks/payments" required aria-describedby="webhook-url-hint">
<p class="hint" id="webhook-url-hint">HTTPS, reachable from the internet. At most ${WEBHOOK_UPDATES_PER_MINUTE} changes of URL or secret per minute (changes by operators count too).</p>
<label class="check"><input type="checkbox" name="enabled" value="on" id="webhook-enabled"${enabled ? html` checked` : ''}> Send events to this URL</label>
<p class="hint">Events start with new activity once enabled; earlier payments are not sent.</p>
<button type="submit" class="button primary" id="save-webhook">Save</button>
</form>
</section>
<section class="card" id="secret-card">
<h2>Signing secret</h2>
${
  !w.hasSecret
    ? html`<p class="muted">The secret is generated when you save a URL for the first time, and shown once.</p>`
    : w.rotationPending
      ? html`<p>A rotation is in progress: every delivery carries two signatures, one per secret (new first). Once your receiver uses the new secret, confirm the rotation to retire the old one.</p>
<div class="actions">${postButton(s, '/portal/webhook/confirm-rotation', 'Confirm rotation', { cls: 'button primary', id: 'confirm-rotation' })}
${postButton(s, '/portal/webhook/rotate', 'Generate another new secret', { cls: 'button secondary', id: 'rotate-secret' })}</div>`
      : html`<p>Rotating creates a new secret and shows it once. The current one keeps verifying until you confirm the rotation, so nothing fails while you deploy the new one.</p>
<div class="actions">${postButton(s, '/portal/webhook/rotate', 'Rotate secret', { cls: 'button secondary', id: 'rotate-secret' })}</div>`
}
</section>
<section class="card" id="test-card">
<h2>Send a test event</h2>
<p>Sends one signed <code>ping</code> to the saved URL now and shows what your endpoint answered. The API has no test event kind (only the two payment events exist), so the ping is not a delivery: it is not retried, not recorded in the delivery log, and carries <code>"event": "ping"</code> with <code>x-service-event: ping</code>. Verify its signature as you would a delivery's. Up to ${PINGS_PER_MINUTE} per minute.</p>
<div class="actions">${postButton(s, '/portal/webhook/test', 'Send test event', { cls: 'button secondary', id: 'send-test' })}</div>
</section>
<section class="card">
<h2>Recent deliveries</h2>
${recent.length ? deliveriesTable(s, recent, true) : html`<p class="muted">No deliveries yet.</p>`}
<p><a href="/portal/deliveries">All deliveries</a></p>
</section>`;
}

function pingBlock(p: PingResult): SafeHtml {
  const o = p.outcome;
  const ok = o.statusCode !== null && o.statusCode >= 200 && o.statusCode < 300 && o.errorClass === null;
  const text =
    o.statusCode !== null
      ? `Your endpoint answered HTTP ${o.statusCode} in ${o.durationMs} ms${o.errorClass === 'redirect' ? ' (a redirect: deliveries do not follow redirects and would be retried)' : ''}.`
      : `No answer from your endpoint after ${o.durationMs} ms: ${o.errorMessage ?? o.errorClass}.`;
  return html`<div class="message ${ok ? 'ok' : 'error'} page-message" id="ping-result" role="status" data-status="${o.statusCode ?? ''}">
<p>Test event <code>${p.deliveryId}</code> sent to <code>${p.url}</code>. ${text}</p>
</div>`;
}

export function secretBody(s: PortalSession, secret: string, kind: 'generated' | 'rotated'): SafeHtml {
  return html`${title(kind === 'generated' ? 'Your webhook secret' : 'Your new webhook secret')}
<div class="secret-box" role="status">
<p><strong>Copy this secret now.</strong> It is shown only this once. Your receiver uses it as the HMAC-SHA256 key, exactly as these 64 characters.</p>
<label for="webhook-secret">Webhook secret</label>
<input type="text" class="readonly-value" id="webhook-secret" value="${secret}" readonly autocomplete="off" spellcheck="false">
</div>
${
  kind === 'rotated'
    ? html`<section class="card">
<h2>Next: confirm the rotation</h2>
<p>Until you confirm, every delivery is signed with both secrets (<code>v1=&lt;new&gt;,v1=&lt;old&gt;,t=…</code>), so your receiver keeps working with the old one. Deploy the new secret, then confirm: from then on only the new secret signs.</p>
<div class="actions">${postButton(s, '/portal/webhook/confirm-rotation', 'Confirm rotation', { cls: 'button primary', id: 'confirm-rotation' })}
<a href="/portal/webhook" class="button secondary">Later</a></div>
</section>`
    : html`<p><a href="/portal/webhook" class="button secondary" id="back-to-webhook">Back to webhooks</a></p>`
}`;
}

// ---------------------------------------------------------------- deliveries

function deliveriesTable(s: PortalSession, list: DeliveryView[], actions: boolean): SafeHtml {
  return html`<div class="table-wrap"><table class="data deliveries">
<thead><tr><th scope="col">Recorded</th><th scope="col">Event</th><th scope="col">Mode</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Delivery</th>${actions ? html`<th scope="col"><span class="offscreen">Actions</span></th>` : ''}</tr></thead>
<tbody>
${list.map(
  (d) => html`<tr data-delivery-id="${d.delivery_id}">
<td data-label="Recorded"><div class="cell">${when(d.recorded_at)}</div></td>
<td data-label="Event"><div class="cell"><code>${d.event}</code></div></td>
<td data-label="Mode"><div class="cell">${modeBadge(d.test_mode)}</div></td>
<td data-label="State"><div class="cell">${badge(d.state, STATE_BADGE[d.state] ?? 'muted')}</div></td>
<td data-label="Attempts" class="num"><div class="cell">${d.attempts}</div></td>
<td data-label="Delivery"><div class="cell"><a href="/portal/deliveries/${d.delivery_id}" class="mono">${d.delivery_id.slice(0, 8)}…</a></div></td>
${actions ? html`<td data-label=""><div class="cell">${canRedeliver(d) ? postButton(s, `/portal/deliveries/${d.delivery_id}/redeliver`, 'Redeliver', { ariaLabel: `Redeliver ${d.delivery_id}` }) : ''}</div></td>` : ''}
</tr>`,
)}
</tbody>
</table></div>`;
}

export function deliveriesBody(s: PortalSession, list: DeliveryView[], o: { offset: number; hasMore: boolean; pageSize: number; notice?: Notice }): SafeHtml {
  return html`${title('Deliveries')}
<p class="lead">Every event sent to your webhook URL, newest first, with its attempts. Retries follow spec §6.5; a redelivery sends the event again under the same <code>delivery_id</code>.</p>
${noticeBlock(o.notice)}
<section class="card">
${list.length ? deliveriesTable(s, list, true) : html`<p class="muted">No deliveries${o.offset ? ' on this page' : ' yet'}.</p>`}
${pager('/portal/deliveries', o.offset, o.hasMore, o.pageSize)}
</section>`;
}

export function deliveryBody(s: PortalSession, d: DeliveryView, attempts: AttemptView[], notice?: Notice): SafeHtml {
  return html`${title('Delivery')}
${noticeBlock(notice)}
<section class="card">
<dl class="kv" id="delivery-fields">
<dt>Delivery id</dt><dd><code>${d.delivery_id}</code></dd>
<dt>Event</dt><dd><code>${d.event}</code> ${modeBadge(d.test_mode)}</dd>
<dt>Request</dt><dd><code>${d.request_id}</code></dd>
<dt>State</dt><dd id="delivery-state">${badge(d.state, STATE_BADGE[d.state] ?? 'muted')}</dd>
<dt>Recorded</dt><dd>${when(d.recorded_at)}</dd>
<dt>Delivered</dt><dd>${when(d.delivered_at)}</dd>
<dt>Next attempt</dt><dd>${when(d.next_attempt_at)}</dd>
</dl>
${
  canRedeliver(d)
    ? html`<div class="actions">${postButton(s, `/portal/deliveries/${d.delivery_id}/redeliver`, 'Redeliver', { cls: 'button primary', id: 'redeliver' })}</div>`
    : d.state === 'skipped'
      ? html`<p class="hint">Recorded while webhooks were off: never delivered, and not redeliverable.</p>`
      : html`<p class="hint">Delivery in progress; it can be redelivered once it has finished.</p>`
}
</section>
<section class="card">
<h2>Attempts</h2>
${
  attempts.length
    ? html`<div class="table-wrap"><table class="data" id="attempts-table">
<thead><tr><th scope="col">#</th><th scope="col">Started</th><th scope="col">Answer</th><th scope="col">Time</th><th scope="col">Outcome</th><th scope="col">Error</th></tr></thead>
<tbody>
${attempts.map(
  (a) => html`<tr>
<td data-label="#" class="num"><div class="cell">${a.attempt}</div></td>
<td data-label="Started"><div class="cell">${when(a.started_at)}</div></td>
<td data-label="Answer" class="num"><div class="cell">${a.status_code === null ? html`<span class="muted">none</span>` : `HTTP ${a.status_code}`}</div></td>
<td data-label="Time" class="num"><div class="cell">${a.duration_ms} ms</div></td>
<td data-label="Outcome"><div class="cell">${badge(a.outcome, a.outcome === 'delivered' ? 'ok' : a.outcome === 'abandoned' ? 'bad' : 'info')}</div></td>
<td data-label="Error"><div class="cell">${a.error_class ? html`<code>${a.error_class}</code> ${a.error_message ?? ''}` : html`<span class="muted">—</span>`}</div></td>
</tr>`,
)}
</tbody>
</table></div>`
    : html`<p class="muted">No attempt yet.</p>`
}
</section>
<p><a href="/portal/deliveries">All deliveries</a></p>`;
}

function pager(path: string, offset: number, hasMore: boolean, size: number, query = ''): SafeHtml {
  if (offset === 0 && !hasMore) return html``;
  const link = (o: number) => `${path}?${query}${query ? '&' : ''}offset=${o}`;
  return html`<nav class="pager" aria-label="Pages">
${offset > 0 ? html`<a href="${link(Math.max(0, offset - size))}">Newer</a>` : html`<span></span>`}
${hasMore ? html`<a href="${link(offset + size)}">Older</a>` : ''}
</nav>`;
}

// ---------------------------------------------------------------- rates

export function ratesBody(s: PortalSession, rates: RateRow[], notice?: Notice): SafeHtml {
  return html`${title('Rates')}
<p class="lead">Fiat units per one stablecoin. A new payment request converts its fiat amount with the rate current at creation and keeps that rate.</p>
${noticeBlock(notice)}
<section class="card">
<div class="table-wrap"><table class="data" id="rates-table">
<thead><tr><th scope="col">Currency</th><th scope="col">Per 1 stablecoin</th><th scope="col">Source</th><th scope="col">Updated</th></tr></thead>
<tbody>
${rates.map(
  (r) => html`<tr data-currency="${r.currency}">
<td data-label="Currency"><div class="cell"><strong>${r.currency.toUpperCase()}</strong></div></td>
<td data-label="Per 1 stablecoin" class="num rate"><div class="cell">${r.rate}</div></td>
<td data-label="Source"><div class="cell"><code>${sourceForPartners(r.source)}</code></div></td>
<td data-label="Updated"><div class="cell">${when(r.updated_at.toISOString())}</div></td>
</tr>`,
)}
</tbody>
</table></div>
<form method="post" action="/portal/rates/refresh" class="actions">
${csrfInput(s)}
<button type="submit" class="button primary" id="refresh-rates">Refresh now</button>
<p class="hint">Rates refresh automatically; a manual refresh is allowed once per minute for your account (spec §8).</p>
</form>
</section>`;
}

// ---------------------------------------------------------------- merchants

export function merchantsBody(mode: Mode, merchants: Merchant[], o: { offset: number; hasMore: boolean; pageSize: number }): SafeHtml {
  const tab = (m: Mode, label: string) => html`<a href="/portal/merchants?mode=${m}"${m === mode ? html` aria-current="page"` : ''}>${label}</a>`;
  return html`${title('Merchants')}
<p class="lead">Merchants you provisioned through the API. A merchant finishes setup (wallet and terms) through its onboarding link; send it the link below until onboarding is complete.</p>
<nav class="tabs" aria-label="Mode">${tab('test', 'Test')}${tab('live', 'Live')}</nav>
<section class="card">
${
  merchants.length === 0
    ? html`<p class="muted">No ${mode} merchants${o.offset ? ' on this page' : ' yet'}.</p>`
    : html`<div class="table-wrap"><table class="data grouped" id="merchants-table">
<thead><tr><th scope="col">Merchant</th><th scope="col">Onboarding</th><th scope="col">Wallet</th><th scope="col">Currency</th><th scope="col">Created</th></tr></thead>
${merchants.map((m) => merchantRows(m))}
</table></div>`
}
${pager('/portal/merchants', o.offset, o.hasMore, o.pageSize, `mode=${mode}`)}
</section>`;
}

/** One merchant: its facts, and below them (until onboarding is complete) the onboarding link, full width. */
function merchantRows(m: Merchant): SafeHtml {
  const id = m.id;
  const name = shownName(m.displayName, m.businessName, m.email);
  const url = m.onboardingUrl;
  const complete = m.onboardingStatus === 'complete';
  return html`<tbody data-merchant-id="${id}">
<tr>
<td data-label="Merchant"><div class="cell">${name ?? html`<span class="muted">(no name)</span>`}<br><code class="muted">${id}</code></div></td>
<td data-label="Onboarding"><div class="cell">${complete ? badge('complete', 'ok') : badge('incomplete', 'warn')}${m.disabled ? html` ${badge('disabled', 'bad')}` : ''}</div></td>
<td data-label="Wallet"><div class="cell">${m.walletAddress ? html`<code>${m.walletAddress}</code>` : html`<span class="muted">not set</span>`}</div></td>
<td data-label="Currency"><div class="cell">${m.displayCurrency.toUpperCase()}</div></td>
<td data-label="Created"><div class="cell">${when(iso(m.createdAt))}</div></td>
</tr>
${
  url
    ? html`<tr class="link-row"><td colspan="5" class="wide"><div class="cell">
<label for="onboarding-${id}">Onboarding link for ${name ?? id}</label>
<input type="text" class="readonly-value" value="${url}" readonly id="onboarding-${id}" aria-describedby="onboarding-${id}-hint">
<p class="hint" id="onboarding-${id}-hint">Select the link and copy it; it works until ${when(m.onboardingUrlExpiresAt ? iso(m.onboardingUrlExpiresAt) : null)} or until onboarding is complete. After that, this page shows a new link.</p>
</div></td></tr>`
    : ''
}
</tbody>`;
}

// ---------------------------------------------------------------- your account

export function accountBody(s: PortalSession, notice?: Notice): SafeHtml {
  return html`${title('Your account')}
<p class="lead">Signed in as <strong id="account-email">${s.email}</strong> · role <span id="account-role">${s.role}</span>. Sessions end 12 hours after sign-in, or after an hour without activity.</p>
${noticeBlock(notice)}
<section class="card">
<h2>Change your password</h2>
<form method="post" action="/portal/account/password" id="password-form">
${csrfInput(s)}
<label for="current-password">Current password</label>
<input type="password" id="current-password" name="current_password" autocomplete="current-password" required>
<label for="new-password">New password</label>
<input type="password" id="new-password" name="new_password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="new-password-hint">
<p class="hint" id="new-password-hint">${PASSWORD_MIN} to ${PASSWORD_MAX} characters. Changing it signs you out everywhere else; this browser stays signed in.</p>
<label for="new-password-repeat">New password again</label>
<input type="password" id="new-password-repeat" name="new_password_repeat" autocomplete="new-password" required>
<button type="submit" class="button primary" id="change-password">Change password</button>
</form>
</section>`;
}

// ---------------------------------------------------------------- users (admins)

export interface InviteForm {
  email?: string;
  role?: string;
}

export function usersBody(s: PortalSession, users: PortalUserInfo[], o: { notice?: Notice; form?: InviteForm } = {}): SafeHtml {
  const role = o.form?.role === 'admin' ? 'admin' : 'member';
  const admins = users.filter((u) => u.role === 'admin').length;
  return html`${title('Users')}
<p class="lead">People who sign in to this portal for ${s.partnerName}. Admins also manage this list; members can do everything else. The last admin cannot be removed or made a member.</p>
${noticeBlock(o.notice)}
<section class="card">
<h2>Invite a user</h2>
<form method="post" action="/portal/users" id="invite-form">
${csrfInput(s)}
<label for="invite-email">Email</label>
<input type="email" id="invite-email" name="email" autocomplete="off" required value="${o.form?.email ?? ''}">
<label for="invite-password">Initial password</label>
<input type="password" id="invite-password" name="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="invite-password-hint">
<p class="hint" id="invite-password-hint">${PASSWORD_MIN} to ${PASSWORD_MAX} characters. Give it to them yourself; they change it under “Your account”.</p>
<fieldset>
<legend>Role</legend>
<div class="choices">
<label class="check"><input type="radio" name="role" value="member" id="invite-role-member"${role === 'member' ? html` checked` : ''}> Member</label>
<label class="check"><input type="radio" name="role" value="admin" id="invite-role-admin"${role === 'admin' ? html` checked` : ''}> Admin (also manages users)</label>
</div>
</fieldset>
<button type="submit" class="button primary" id="invite-user">Add user</button>
</form>
</section>
<section class="card">
<h2>Users</h2>
<div class="table-wrap"><table class="data" id="users-table">
<thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Added</th><th scope="col"><span class="offscreen">Actions</span></th></tr></thead>
<tbody>
${users.map((u) => {
  const self = u.id === s.userId;
  const lastAdmin = u.role === 'admin' && admins === 1;
  const other = u.role === 'admin' ? 'member' : 'admin';
  return html`<tr data-user-id="${u.id}">
<td data-label="Email"><div class="cell">${u.email}${self ? html` ${badge('you', 'info')}` : ''}</div></td>
<td data-label="Role"><div class="cell">${badge(u.role, u.role === 'admin' ? 'ok' : 'muted')}</div></td>
<td data-label="Added"><div class="cell">${when(iso(u.createdAt))}</div></td>
<td data-label=""><div class="cell">${
    lastAdmin
      ? html`<span class="hint">the last admin</span>`
      : html`<form method="post" action="/portal/users/${u.id}/role" class="inline">${csrfInput(s)}<input type="hidden" name="role" value="${other}"><button type="submit" class="button-small" aria-label="Make ${u.email} ${other === 'admin' ? 'an admin' : 'a member'}">Make ${other}</button></form>`
  }${
    self || lastAdmin ? '' : html` ${postButton(s, `/portal/users/${u.id}/remove`, 'Remove', { ariaLabel: `Remove ${u.email}` })}`
  }</div></td>
</tr>`;
})}
</tbody>
</table></div>
</section>`;
}

// ---------------------------------------------------------------- problems

export function problemBody(p: { title: string; detail: string; reference?: string; back?: { href: string; label: string } }): SafeHtml {
  return html`<section class="card" id="problem">
<h1>${p.title}</h1>
<p>${p.detail}</p>
${p.reference ? html`<p class="hint">Reference: <code>${p.reference}</code></p>` : ''}
${p.back ? html`<p><a href="${p.back.href}" class="button secondary">${p.back.label}</a></p>` : ''}
</section>`;
}

// ---------------------------------------------------------------- audit log

/** What the partner's users and the operators changed, newest first; `emails` names the users who still exist. */
/** An event's details as its partner may read them: a rate refresh names the kind of source, not its host. */
function partnerDetails(e: AuditEvent): Record<string, unknown> {
  const source = e.details.source;
  return e.action === 'rates.refreshed' && typeof source === 'string' ? { ...e.details, source: sourceForPartners(source) } : e.details;
}

export function auditBody(events: AuditEvent[], emails: Map<string, string>, o: { offset: number; hasMore: boolean; pageSize: number }): SafeHtml {
  const who = (e: AuditEvent): SafeHtml => {
    switch (e.actorKind) {
      case 'admin':
        return html`${badge('operator', 'info')}`;
      case 'system':
        return html`${badge('service', 'muted')}`;
      case 'portal_user':
        return html`${emails.get(e.actorId ?? '') ?? html`<span class="muted">removed user</span> <code>${e.actorId}</code>`}`;
    }
  };
  return html`${title('Audit log')}
<p class="lead">Every change made to this account in the portal, by the service's operators or by the service itself, and every sign-in to the portal, newest first: keys, webhook settings, users, redeliveries, resends, rate refreshes, released wallets, sign-ins. It never shows secrets, keys or passwords. Entries cannot be changed or deleted.</p>
<section class="card">
${
  events.length
    ? html`<div class="table-wrap"><table class="data" id="audit-table">
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">From</th><th scope="col">Action</th><th scope="col">Details</th></tr></thead>
<tbody>
${events.map(
  (e) => html`<tr data-event-id="${e.id}" data-action="${e.action}">
<td data-label="When"><div class="cell">${when(iso(e.at))}</div></td>
<td data-label="Who"><div class="cell">${who(e)}</div></td>
<td data-label="From"><div class="cell">${e.clientAddress && e.actorKind !== 'admin' ? html`<code>${e.clientAddress}</code>` : html`<span class="muted">—</span>`}</div></td>
<td data-label="Action"><div class="cell"><code>${e.action}</code></div></td>
<td data-label="Details"><div class="cell"><code>${JSON.stringify({ ...(e.targetId ? { target_id: e.targetId } : {}), ...partnerDetails(e) })}</code></div></td>
</tr>`,
)}
</tbody>
</table></div>`
    : html`<p class="muted">No changes recorded${o.offset ? ' on this page' : ' yet'}.</p>`
}
${pager('/portal/audit', o.offset, o.hasMore, o.pageSize)}
</section>`;
}
