import { currencyOption, html, pageDocument, textField, type SafeHtml } from './html';

/**
 * The merchant dashboard's pages (DESIGN §5): each is a server-rendered shell of headings, forms and empty
 * slots; dashboard.js signs in, reads the dashboard API and fills them. Nothing here reads merchant data, so
 * a page never shows one merchant's data to another: the API decides, per call, from the session cookie.
 */
export type DashboardPage = 'sign-in' | 'home' | 'requests' | 'request' | 'new-request' | 'settings' | 'handle' | 'plans' | 'plan' | 'new-plan';

export interface DashboardAssets {
  stylesheet: string;
  script: string;
}

/** The SIWE fields fixed by the service's public URL (DESIGN §5): domain is its host, uri is PUBLIC_URL/dashboard. */
export interface SignInTarget {
  domain: string;
  uri: string;
}

const NAV: { page: DashboardPage; href: string; label: string }[] = [
  { page: 'home', href: '/dashboard', label: 'Home' },
  { page: 'requests', href: '/dashboard/requests', label: 'Requests' },
  { page: 'new-request', href: '/dashboard/requests/new', label: 'New request' },
  { page: 'plans', href: '/dashboard/plans', label: 'Plans' },
  { page: 'handle', href: '/dashboard/handle', label: 'Handle' },
  { page: 'settings', href: '/dashboard/settings', label: 'Settings' },
];

const TITLES: Record<DashboardPage, string> = {
  'sign-in': 'Sign in',
  home: 'Dashboard',
  requests: 'Requests',
  request: 'Request',
  'new-request': 'New request',
  settings: 'Settings',
  handle: 'Your handle',
  plans: 'Plans',
  plan: 'Plan',
  'new-plan': 'New plan',
};

function navigation(current: DashboardPage): SafeHtml {
  const active = current === 'request' ? 'requests' : current === 'plan' || current === 'new-plan' ? 'plans' : current;
  return html`<header class="dash-header">
<div class="dash-bar">
<a class="dash-brand" href="/dashboard">Merchant dashboard</a>
<span class="dash-who"><span id="dash-merchant-name"></span> <span class="badge" id="dash-test-mode" hidden>Test mode</span></span>
<button class="button-small" id="sign-out-button" type="button">Sign out</button>
</div>
<nav aria-label="Dashboard">
<ul class="dash-nav">
${NAV.map(
  (n) =>
    html`<li><a href="${n.href}" id="nav-${n.page}"${n.page === active ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
)}
</ul>
</nav>
</header>`;
}

const messages = html`<p class="message page-message" id="dash-progress" aria-live="polite"></p>
<p class="message page-message error" id="dash-error" role="alert"></p>
<p class="message page-message error" id="dash-disabled" hidden>Your account is disabled: you can read everything here, but no new payment requests can be created. Ask your partner why.</p>`;

function selectField(o: { id: string; name: string; label: string; options: [string, string][] }): SafeHtml {
  return html`<div><label for="${o.id}">${o.label}</label>
<select id="${o.id}" name="${o.name}">
${o.options.map(([value, label]) => html`<option value="${value}">${label}</option>`)}
</select></div>`;
}

const STATUS_OPTIONS: [string, string][] = [
  ['', 'Any'],
  ['requested', 'Requested'],
  ['opened', 'Opened'],
  ['expired', 'Expired'],
  ['voided', 'Cancelled'],
];
const PROOF_OPTIONS: [string, string][] = [
  ['', 'Any'],
  ['none', 'Not paid'],
  ['attached', 'Payment being checked'],
  ['verified', 'Paid'],
];
const SOURCE_OPTIONS: [string, string][] = [
  ['', 'Any'],
  ['partner', 'Partner API'],
  ['dashboard', 'Dashboard'],
  ['handle', 'Handle page'],
  ['plan', 'Plan'],
];

function signInBody(target: SignInTarget): SafeHtml {
  return html`<main id="dashboard" class="dash-narrow" data-page="sign-in" data-siwe-domain="${target.domain}" data-siwe-uri="${target.uri}">
<section class="card" aria-labelledby="sign-in-title">
<p class="eyebrow">Merchant dashboard</p>
<h1 id="sign-in-title">Sign in with your wallet</h1>
<p>Use the wallet that receives your payments. Your wallet will ask you to sign a message; signing is free and sends no transaction.</p>
<noscript><p class="message error">This page needs JavaScript to talk to your wallet.</p></noscript>
<button class="button primary" id="sign-in-button" type="button">Connect wallet and sign in</button>
</section>
${messages}
</main>`;
}

const homeBody = html`<section class="card" aria-labelledby="home-title">
<h1 id="home-title">Hello<span id="home-name"></span></h1>
<p>Create payment requests, follow them until they are paid, and share your handle page.</p>
<a class="button primary" href="/dashboard/requests/new" id="home-new">New request</a>
</section>
<section class="card" aria-labelledby="totals-title">
<h2 id="totals-title">Last 30 days</h2>
<table class="dash-table" id="totals">
<thead><tr><th scope="col">Status</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Amount</th></tr></thead>
<tbody id="totals-body"></tbody>
</table>
<p class="hint" id="totals-note"></p>
</section>
<section class="card" aria-labelledby="recent-title">
<h2 id="recent-title">Recent requests</h2>
<ul class="req-list" id="recent-list"></ul>
<p class="hint" id="recent-empty" hidden>No requests yet.</p>
<p><a href="/dashboard/requests">All requests</a></p>
</section>`;

const requestsBody = html`<section class="card" aria-labelledby="requests-title">
<h1 id="requests-title">Requests</h1>
<form id="filters" method="get" action="/dashboard/requests" class="filters">
<div class="filter-grid">
${selectField({ id: 'filter-status', name: 'status', label: 'Status', options: STATUS_OPTIONS })}
${selectField({ id: 'filter-proof', name: 'proof_status', label: 'Payment', options: PROOF_OPTIONS })}
${selectField({ id: 'filter-source', name: 'source', label: 'Created by', options: SOURCE_OPTIONS })}
<div><label for="filter-from">From</label><input type="date" id="filter-from" name="from"></div>
<div><label for="filter-to">To (inclusive)</label><input type="date" id="filter-to" name="to"></div>
</div>
<div class="filter-actions">
<button class="button primary" type="submit" id="filter-apply">Apply filters</button>
<a class="button secondary" href="/dashboard/requests" id="filter-clear">Clear</a>
</div>
</form>
</section>
<section class="card" aria-labelledby="list-title">
<div class="list-head">
<h2 id="list-title">Results</h2>
<a class="button-small" id="csv-link" href="/dashboard/api/requests.csv" download>Download CSV</a>
</div>
<ul class="req-list" id="request-list"></ul>
<p class="hint" id="request-empty" hidden>No requests match these filters.</p>
<nav class="pager" aria-label="Pages">
<a class="button-small" id="page-prev" href="#" hidden>Previous</a>
<span id="page-info"></span>
<a class="button-small" id="page-next" href="#" hidden>Next</a>
</nav>
</section>`;

const requestBody = html`<section class="card" aria-labelledby="request-title">
<p class="eyebrow"><a href="/dashboard/requests">Requests</a></p>
<h1 id="request-title">Request <span id="request-amount"></span></h1>
<p class="status-line"><span class="state" id="request-state"></span></p>
<dl class="details" id="request-fields"></dl>
<button class="button secondary" type="button" id="cancel-button" hidden>Cancel this request</button>
</section>
<section class="card" aria-labelledby="customer-title">
<h2 id="customer-title">Customer</h2>
<dl class="details" id="customer-fields"></dl>
</section>
<section class="card" aria-labelledby="notifications-title">
<h2 id="notifications-title">Messages sent</h2>
<ul class="plain-list" id="notification-list"></ul>
<p class="hint" id="notification-empty" hidden>No receipts or notices were sent about this request.</p>
</section>`;

function newRequestBody(): SafeHtml {
  return html`<section class="card" aria-labelledby="new-title">
<h1 id="new-title">New payment request</h1>
<p>The customer pays on the pay page; share its link or show its QR code.</p>
<form id="new-form" novalidate>
<fieldset id="new-fields">
${textField({ id: 'new-amount', name: 'amount', label: 'Amount', value: '', hint: 'In your currency, for example 12.50.', extra: html` inputmode="decimal" autocomplete="off" required` })}
${textField({ id: 'new-memo', name: 'memo', label: 'Note for the customer (optional)', value: '', hint: 'Shown on the pay page.', extra: html` maxlength="500"` })}
${textField({ id: 'new-customer-name', name: 'customer_name', label: 'Customer name (optional)', value: '', extra: html` maxlength="200" autocomplete="off"` })}
${textField({ id: 'new-customer-email', name: 'customer_email', label: 'Customer email (optional)', value: '', type: 'email', hint: 'A receipt goes here when the payment is confirmed.', extra: html` maxlength="254" autocomplete="off"` })}
${textField({ id: 'new-customer-phone', name: 'customer_phone', label: 'Customer phone (optional)', value: '', type: 'tel', extra: html` maxlength="50" autocomplete="off"` })}
${textField({ id: 'new-expiry', name: 'expiry_minutes', label: 'Expires after, in minutes (optional)', value: '', hint: 'Leave empty for your partner’s default.', extra: html` inputmode="numeric" autocomplete="off"` })}
<button class="button primary" id="new-submit" type="submit">Create request</button>
</fieldset>
</form>
</section>`;
}

function settingsBody(currencies: string[]): SafeHtml {
  const t = (id: string, name: string, label: string, extra: SafeHtml, type = 'text') => textField({ id, name, label, value: '', type, extra });
  return html`<section class="card" aria-labelledby="settings-title">
<h1 id="settings-title">Settings</h1>
<dl class="details">
<dt>Wallet that receives payments</dt><dd><code id="settings-wallet"></code></dd>
<dt>Receipts</dt><dd id="settings-channels"></dd>
</dl>
<form id="settings-form" novalidate>
<fieldset id="settings-fields" disabled>
${t('settings-display-name', 'display_name', 'Name shown to payers', html` maxlength="120"`)}
${t('settings-business-name', 'business_name', 'Legal business name', html` maxlength="120"`)}
${t('settings-email', 'email', 'Email', html` maxlength="254" autocomplete="email"`, 'email')}
${t('settings-phone', 'phone', 'Phone', html` maxlength="32" autocomplete="tel"`, 'tel')}
${t('settings-website', 'website', 'Website', html` maxlength="200"`)}
${t('settings-instagram', 'instagram', 'Instagram', html` maxlength="200"`)}
${t('settings-industry', 'industry', 'Industry', html` maxlength="80"`)}
${textField({ id: 'settings-country', name: 'country', label: 'Country', value: '', hint: 'Two-letter code, for example DE, US or IN.', extra: html` maxlength="2" autocapitalize="characters"` })}
<label for="settings-display-currency">Currency of your prices</label>
<select id="settings-display-currency" name="display_currency" aria-describedby="settings-display-currency-error">
${currencies.map((c) => currencyOption(c, null))}
</select>
<p class="field-error" id="settings-display-currency-error" aria-live="polite"></p>
<button class="button primary" id="settings-save" type="submit">Save settings</button>
</fieldset>
</form>
</section>`;
}

const handleBody = html`<section class="card" aria-labelledby="handle-title">
<h1 id="handle-title">Your handle</h1>
<p>Your handle gives you a public page where anyone can pay you an amount of their choice.</p>
<p id="handle-current" hidden>Your page: <a id="handle-url" href="#"></a></p>
<p class="hint" id="handle-none" hidden>You have no handle yet.</p>
<form id="handle-form" novalidate>
<fieldset id="handle-fields" disabled>
${textField({ id: 'handle-input', name: 'handle', label: 'Handle', value: '', hint: '3 to 20 characters: letters a–z, digits and single dashes; starts with a letter. A handle you give up is never given to anyone else.', extra: html` maxlength="20" autocapitalize="none" autocomplete="off" spellcheck="false"` })}
<button class="button primary" id="handle-save" type="submit">Save handle</button>
</fieldset>
</form>
</section>`;

const plansBody = html`<section class="card" aria-labelledby="plans-title">
<div class="list-head">
<h1 id="plans-title">Recurring plans</h1>
<a class="button-small" href="/dashboard/plans/new" id="plans-new">New plan</a>
</div>
<p>A plan is one payer’s schedule: each period it creates a payment request for them, with your plan’s metadata.</p>
<ul class="req-list" id="plan-list"></ul>
<p class="hint" id="plan-empty" hidden>No plans yet.</p>
</section>`;

const INTERVAL_OPTIONS: [string, string][] = [
  ['month', 'Months'],
  ['week', 'Weeks'],
  ['day', 'Days'],
  ['year', 'Years'],
];

function newPlanBody(): SafeHtml {
  return html`<section class="card" aria-labelledby="new-plan-title">
<h1 id="new-plan-title">New recurring plan</h1>
<form id="plan-form" novalidate>
<fieldset id="plan-fields">
${textField({ id: 'plan-title-input', name: 'title', label: 'Title', value: '', hint: 'What the payer pays for, for example “Monthly box”.', extra: html` maxlength="120" required` })}
${textField({ id: 'plan-amount', name: 'amount', label: 'Amount each period', value: '', hint: 'In your currency, for example 25.00.', extra: html` inputmode="decimal" autocomplete="off" required` })}
${textField({ id: 'plan-count', name: 'interval_count', label: 'Every', value: '1', hint: '1 to 12.', extra: html` inputmode="numeric" autocomplete="off"` })}
${selectField({ id: 'plan-interval', name: 'interval', label: 'Period', options: INTERVAL_OPTIONS })}
${textField({ id: 'plan-start', name: 'start_at', label: 'First charge (optional)', value: '', type: 'datetime-local', hint: 'Your local time. Leave empty to charge now.' })}
${textField({ id: 'plan-max', name: 'max_charges', label: 'Number of charges (optional)', value: '', hint: 'Leave empty to go on until cancelled.', extra: html` inputmode="numeric" autocomplete="off"` })}
${textField({ id: 'plan-payer-name', name: 'payer_name', label: 'Payer name (optional)', value: '', extra: html` maxlength="200" autocomplete="off"` })}
${textField({ id: 'plan-payer-email', name: 'payer_email', label: 'Payer email (optional)', value: '', type: 'email', extra: html` maxlength="254" autocomplete="off"` })}
${textField({ id: 'plan-expiry', name: 'expiry_minutes', label: 'Each charge expires after, in minutes (optional)', value: '', hint: 'Leave empty for 7 days (10080).', extra: html` inputmode="numeric" autocomplete="off"` })}
${textField({ id: 'plan-metadata', name: 'metadata', label: 'Metadata (optional)', value: '', hint: 'key=value pairs, one per line; each charge carries them to your partner.' , extra: html` autocomplete="off"` })}
<button class="button primary" id="plan-submit" type="submit">Create plan</button>
</fieldset>
</form>
</section>`;
}

const planBody = html`<section class="card" aria-labelledby="plan-title">
<p class="eyebrow"><a href="/dashboard/plans">Plans</a></p>
<h1 id="plan-title">Plan <span id="plan-name"></span></h1>
<p class="status-line"><span class="state" id="plan-state"></span></p>
<dl class="details" id="plan-fields-list"></dl>
<div class="plan-actions">
<button class="button secondary" type="button" id="plan-pause" hidden>Pause</button>
<button class="button secondary" type="button" id="plan-resume" hidden>Resume</button>
<button class="button secondary" type="button" id="plan-cancel" hidden>Cancel plan</button>
<button class="button secondary" type="button" id="plan-advance" hidden>Advance (test clock)</button>
</div>
</section>
<section class="card" aria-labelledby="charges-title">
<h2 id="charges-title">Charges</h2>
<ul class="req-list" id="charge-list"></ul>
<p class="hint" id="charge-empty" hidden>No charges yet.</p>
</section>`;

export interface DashboardPageInput {
  page: DashboardPage;
  assets: DashboardAssets;
  signIn: SignInTarget;
  /** Lower-case codes the service has rates for (settings). */
  currencies: string[];
  requestId?: string;
  planId?: string;
}

export function renderDashboardPage(p: DashboardPageInput): string {
  const title = `${TITLES[p.page]} · Merchant dashboard`;
  if (p.page === 'sign-in') return pageDocument({ title, stylesheet: p.assets.stylesheet, script: p.assets.script, body: signInBody(p.signIn) });
  const bodies: Record<Exclude<DashboardPage, 'sign-in'>, () => SafeHtml> = {
    home: () => homeBody,
    requests: () => requestsBody,
    request: () => requestBody,
    'new-request': newRequestBody,
    settings: () => settingsBody(p.currencies),
    handle: () => handleBody,
    plans: () => plansBody,
    plan: () => planBody,
    'new-plan': newPlanBody,
  };
  return pageDocument({
    title,
    stylesheet: p.assets.stylesheet,
    script: p.assets.script,
    body: html`${navigation(p.page)}
<main id="dashboard" class="dash-main" data-page="${p.page}"${p.requestId ? html` data-request-id="${p.requestId}"` : ''}${p.planId ? html` data-plan-id="${p.planId}"` : ''}>
${messages}
<div id="dash-content" hidden>
${bodies[p.page]()}
</div>
</main>`,
  });
}

/** The public handle page (DESIGN §5): handle.js reads GET /m/api/<handle> and creates the request. */
export function renderHandlePage(handle: string, assets: DashboardAssets): string {
  return pageDocument({
    title: 'Pay',
    stylesheet: assets.stylesheet,
    script: assets.script,
    body: html`<main id="handle-page" data-handle="${handle}">
<section class="card" aria-labelledby="handle-page-title">
<p class="eyebrow">Pay <span class="badge" id="handle-test-mode" hidden>Test mode</span></p>
<h1 id="handle-page-title"><span id="handle-name">Loading…</span></h1>
<noscript><p class="message error">This page needs JavaScript.</p></noscript>
<p class="message error" id="handle-closed" hidden>This merchant is not accepting payments right now.</p>
<form id="handle-form" novalidate hidden>
${textField({ id: 'handle-amount', name: 'amount', label: 'Amount', value: '', hint: 'For example 12.50', extra: html` inputmode="decimal" autocomplete="off" required` })}
${textField({ id: 'handle-memo', name: 'memo', label: 'Note for the merchant (optional)', value: '', extra: html` maxlength="500"` })}
${textField({ id: 'handle-email', name: 'customer_email', label: 'Your email for a receipt (optional)', value: '', type: 'email', extra: html` maxlength="254" autocomplete="email"` })}
<button class="button primary" id="handle-pay" type="submit">Pay</button>
</form>
</section>
<p class="message page-message error" id="handle-error" role="alert"></p>
</main>`,
  });
}
