import { amountProblem, parseFiat } from '../../modules/pages/format';
import { api, ApiError } from '../lib/api';
import { newIdempotencyKey } from '../lib/idempotency';
import { byId, say } from '../lib/dom';
import { siweMessage } from '../lib/siwe';
import { injectedWallet, requestAccount, signText, walletChainId } from '../lib/wallet';
import { clearFieldErrors, fieldError, formValues, showFieldErrors } from './forms';
import { el, fillDetails, money, requestItem, stateBadge, tokenAmount, when } from './render';
import { afterSignIn, dash, rememberCsrf } from './session';
import type { DashboardRequest, Me, RequestPage, TokenAsset } from './types';
import { explain, SOURCE_NAMES, STATUS_NAMES } from './words';
import { shownName } from '../../common/names';

export interface PageContext {
  root: HTMLElement;
  me: Me;
  progress: HTMLElement;
  problem: HTMLElement;
}

const STATEMENT = 'Sign in to your merchant dashboard.';
const SIGNATURE_VALID_MS = 10 * 60 * 1000;

/** Shows a failure in words, above the page's content, and keeps it in sight. */
export function fail(ctx: Pick<PageContext, 'progress' | 'problem'>, e: unknown): void {
  say(ctx.progress, '');
  say(ctx.problem, explain(e));
  ctx.problem.scrollIntoView({ block: 'nearest' });
}

// ---- sign in -------------------------------------------------------------------------------------------

export function signInPage(root: HTMLElement, progress: HTMLElement, problem: HTMLElement): void {
  const button = byId<HTMLButtonElement>('sign-in-button');
  button.addEventListener('click', async () => {
    button.disabled = true;
    say(problem, '');
    try {
      const eth = injectedWallet();
      say(progress, 'Connecting to your wallet…');
      const account = await requestAccount(eth);
      const { nonce } = await api<{ nonce: string }>('GET', '/dashboard/api/nonce');
      const message = siweMessage({
        domain: root.dataset.siweDomain!,
        address: account,
        statement: STATEMENT,
        uri: root.dataset.siweUri!,
        chainId: await walletChainId(eth),
        nonce,
        issuedAt: new Date(),
        expirationTime: new Date(Date.now() + SIGNATURE_VALID_MS),
      });
      say(progress, 'Sign the message in your wallet. Signing is free and sends no transaction.');
      const signature = await signText(eth, account, message);
      const session = await api<{ csrf_token: string }>('POST', '/dashboard/api/session', { message, signature });
      rememberCsrf(session.csrf_token);
      say(progress, 'Signed in.');
      location.assign(afterSignIn());
    } catch (e) {
      fail({ progress, problem }, e);
      button.disabled = false;
    }
  });
}

// ---- home ----------------------------------------------------------------------------------------------

const TOTAL_DAYS = 30;
/** Pages of 100 read for the totals; beyond that the page says the totals are partial. */
const TOTAL_PAGES = 20;

export async function homePage(ctx: PageContext): Promise<void> {
  const name = shownName(ctx.me.display_name, ctx.me.business_name);
  if (name) byId('home-name').textContent = `, ${name}`;
  const recent = await dash<RequestPage>('GET', '/requests?limit=10');
  byId('recent-list').replaceChildren(...recent.requests.map(requestItem));
  byId('recent-empty').hidden = recent.requests.length > 0;

  // Totals from the list itself (DESIGN §5 has no summary endpoint): every request of the last 30 days.
  const since = new Date(Date.now() - TOTAL_DAYS * 86400000).toISOString();
  const rows = new Map<string, { count: number; sum: Map<string, number> }>();
  const add = (key: string, r: DashboardRequest) => {
    const row = rows.get(key) ?? { count: 0, sum: new Map<string, number>() };
    row.count++;
    row.sum.set(r.fiat_currency, (row.sum.get(r.fiat_currency) ?? 0) + r.fiat_amount);
    rows.set(key, row);
  };
  let offset = 0;
  let partial = false;
  for (let page = 0; ; page++) {
    if (page === TOTAL_PAGES) {
      partial = true;
      break;
    }
    const batch = await dash<RequestPage>('GET', `/requests?since=${encodeURIComponent(since)}&limit=100&offset=${offset}`);
    for (const r of batch.requests) {
      add(r.status, r);
      if (r.proof_status === 'verified') add('paid', r);
    }
    if (!batch.has_more) break;
    offset += batch.requests.length;
  }
  const order: [string, string][] = [['paid', 'Paid'], ...Object.entries(STATUS_NAMES)];
  byId('totals-body').replaceChildren(
    ...order.map(([key, label]) => {
      const row = rows.get(key);
      const sums = row ? [...row.sum].map(([currency, minor]) => money({ fiat_amount: minor, fiat_currency: currency })).join(' + ') : '—';
      return el('tr', { 'data-status': key }, el('th', { scope: 'row' }, label), el('td', { class: 'num' }, String(row?.count ?? 0)), el('td', { class: 'num' }, sums));
    }),
  );
  say(
    byId('totals-note'),
    `Requests created since ${when(since)}. Paid ones are also counted under their status.${partial ? ' Only the latest 2,000 requests are counted.' : ''}`,
  );
}

// ---- requests list --------------------------------------------------------------------------------------

const PAGE_SIZE = 25;
const FILTERS = ['status', 'proof_status', 'source'] as const;

/** A date input's day (local time) as the ISO moment of its start; `to` is inclusive, so until is the next day. */
function dayStart(day: string, plusDays = 0): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return null;
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + plusDays).toISOString();
}

/** The API query (spec §4.3 plus source) for the page's own query (from/to are dates). */
export function apiQuery(page: URLSearchParams): URLSearchParams {
  const q = new URLSearchParams();
  for (const f of FILTERS) {
    const v = page.get(f);
    if (v) q.set(f, v);
  }
  const since = dayStart(page.get('from') ?? '');
  const until = dayStart(page.get('to') ?? '', 1);
  if (since) q.set('since', since);
  if (until) q.set('until', until);
  return q;
}

export async function requestsPage(ctx: PageContext): Promise<void> {
  const params = new URLSearchParams(location.search);
  const form = byId<HTMLFormElement>('filters');
  for (const name of [...FILTERS, 'from', 'to']) {
    const input = form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null;
    const v = params.get(name);
    if (input && v) input.value = v;
  }
  // Empty fields stay out of the URL.
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    for (const name of [...FILTERS, 'from', 'to']) {
      const v = String(new FormData(form).get(name) ?? '');
      if (v) q.set(name, v);
    }
    location.assign(`/dashboard/requests${q.size ? `?${q}` : ''}`);
  });

  const query = apiQuery(params);
  const csv = byId<HTMLAnchorElement>('csv-link');
  csv.href = `/dashboard/api/requests.csv${query.size ? `?${query}` : ''}`;

  const offset = Math.max(0, Number.parseInt(params.get('offset') ?? '0', 10) || 0);
  query.set('limit', String(PAGE_SIZE));
  query.set('offset', String(offset));
  const page = await dash<RequestPage>('GET', `/requests?${query}`);
  byId('request-list').replaceChildren(...page.requests.map(requestItem));
  byId('request-empty').hidden = page.requests.length > 0;

  const link = (id: string, to: number | null) => {
    const a = byId<HTMLAnchorElement>(id);
    a.hidden = to === null;
    if (to === null) return;
    const q = new URLSearchParams(params);
    if (to) q.set('offset', String(to));
    else q.delete('offset');
    a.href = `/dashboard/requests${q.size ? `?${q}` : ''}`;
  };
  link('page-prev', offset > 0 ? Math.max(0, offset - PAGE_SIZE) : null);
  link('page-next', page.has_more ? offset + page.requests.length : null);
  say(byId('page-info'), page.requests.length ? `${offset + 1}–${offset + page.requests.length}` : '');
}

// ---- request detail -------------------------------------------------------------------------------------

function showRequest(r: DashboardRequest, assets: readonly TokenAsset[]): void {
  byId('request-amount').textContent = money(r);
  byId('request-state').replaceWith(Object.assign(stateBadge(r), { id: 'request-state' }));
  const pay = el('a', { href: r.pay_page_url, id: 'request-pay-link' }, r.pay_page_url);
  fillDetails(byId('request-fields'), [
    ['Request id', el('code', {}, r.request_id)],
    ['Pay page', pay],
    ['Status', STATUS_NAMES[r.status] ?? r.status],
    ['Payment', r.proof_status === 'verified' ? `Paid ${when(r.proof_verified_at)}` : r.proof_status === 'attached' ? 'Being checked' : 'Not paid'],
    ['Transaction', r.tx_hash ? el('code', {}, r.tx_hash) : null],
    ['Amount in tokens', el('span', { id: 'request-token-amount' }, tokenAmount(r, assets))],
    ['Token', el('code', {}, r.asset_id)],
    ['Created', when(r.created_at)],
    ['Expires', when(r.expires_at)],
    ['Created by', SOURCE_NAMES[r.source] ?? r.source],
    ['Note for the customer', r.memo],
    ...(r.plan_id ? ([['Plan', el('a', { href: `/dashboard/plans/${r.plan_id}`, id: 'request-plan-link' }, `Charge ${(r.period_index ?? 0) + 1} of a plan`)]] as [string, Node][]) : []),
  ]);
  fillDetails(byId('customer-fields'), [
    ['Name', r.customer_name],
    ['Email', r.customer_email],
    ['Phone', r.customer_phone],
  ]);
  const sent = r.notifications ?? [];
  byId('notification-list').replaceChildren(
    ...sent.map((n) => el('li', {}, `${n.kind} by ${n.channel} to ${n.to}: ${n.status}${n.sent_at ? `, ${when(n.sent_at)}` : ''}`)),
  );
  byId('notification-empty').hidden = sent.length > 0;
  byId('cancel-button').hidden = !(r.status === 'requested' && r.proof_status === 'none');
}

export async function requestPage(ctx: PageContext): Promise<void> {
  const id = ctx.root.dataset.requestId!;
  const request = await dash<DashboardRequest>('GET', `/requests/${encodeURIComponent(id)}`);
  // Read once: a request's token never changes, so a cancel's answer is shown with the same list. Without it
  // the amount still reads exactly, in base units, and the rest of the page is worth showing.
  const assets = await dash<{ assets: TokenAsset[] }>('GET', `/assets?${new URLSearchParams({ asset_id: request.asset_id })}`)
    .then((a) => a.assets)
    .catch(() => []);
  showRequest(request, assets);
  const cancel = byId<HTMLButtonElement>('cancel-button');
  cancel.addEventListener('click', async () => {
    if (!window.confirm('Cancel this request? The customer can no longer pay it.')) return;
    cancel.disabled = true;
    say(ctx.problem, '');
    try {
      showRequest(await dash<DashboardRequest>('POST', `/requests/${encodeURIComponent(id)}/cancel`), assets);
      say(ctx.progress, 'The request was cancelled.');
    } catch (e) {
      // cannot_cancel carries the current request: show what it is now.
      if (e instanceof ApiError && e.code === 'cannot_cancel' && e.body.request_id) showRequest(e.body as DashboardRequest, assets);
      fail(ctx, e);
    } finally {
      cancel.disabled = false;
    }
  });
}

// ---- new request ----------------------------------------------------------------------------------------

export function newRequestPage(ctx: PageContext): void {
  const currency = ctx.me.display_currency ?? 'usd';
  const form = byId<HTMLFormElement>('new-form');
  const fields = byId<HTMLFieldSetElement>('new-fields');
  document.querySelector('label[for="new-amount"]')!.textContent = `Amount in ${currency.toUpperCase()}`;
  if (ctx.me.disabled) fields.disabled = true;
  // The same key for every submit of this form: a retry after a lost answer returns the request already made.
  const idempotencyKey = newIdempotencyKey();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFieldErrors(form);
    say(ctx.problem, '');
    const v = formValues(form, ['amount', 'memo', 'customer_name', 'customer_email', 'customer_phone', 'expiry_minutes']);
    const amount = parseFiat(v.amount ?? '', currency);
    if (amount === null) {
      fieldError(form, 'amount', amountProblem(v.amount ?? '', currency, '12.50'));
      byId('new-amount').focus();
      return;
    }
    if (v.expiry_minutes && !/^\d+$/.test(v.expiry_minutes)) {
      fieldError(form, 'expiry_minutes', 'Use a whole number of minutes, or leave it empty.');
      return;
    }
    const body: Record<string, unknown> = { fiat_amount_int: amount, fiat_currency_code: currency };
    for (const k of ['memo', 'customer_name', 'customer_email', 'customer_phone'] as const) if (v[k]) body[k] = v[k];
    if (v.expiry_minutes) body.expiry_minutes = Number(v.expiry_minutes);
    fields.disabled = true;
    say(ctx.progress, 'Creating the request…');
    try {
      const created = await dash<DashboardRequest>('POST', '/requests', body, { 'idempotency-key': idempotencyKey });
      location.assign(`/dashboard/requests/${created.request_id}`);
    } catch (e) {
      showFieldErrors(form, e, { fiat_amount_int: 'amount' });
      if (e instanceof ApiError && e.code === 'invalid_expiry_minutes') fieldError(form, 'expiry_minutes', explain(e));
      fail(ctx, e);
      fields.disabled = false;
    }
  });
}

// ---- settings -------------------------------------------------------------------------------------------

const SETTINGS = ['display_name', 'business_name', 'email', 'phone', 'website', 'instagram', 'industry', 'country', 'display_currency'] as const;

function fillSettings(form: HTMLFormElement, me: Me): void {
  for (const name of SETTINGS) {
    const input = form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;
    const value = me[name] ?? '';
    if (input instanceof HTMLSelectElement && value && !Array.from(input.options).some((o) => o.value === value)) {
      input.append(el('option', { value }, value.toUpperCase()));
    }
    input.value = value;
  }
  byId('settings-wallet').textContent = me.wallet_address ?? '—';
  const channels = [me.email_enabled ? 'email' : null, me.sms_enabled ? 'SMS' : null].filter(Boolean);
  say(byId('settings-channels'), channels.length ? `Sent by ${channels.join(' and ')}.` : 'Email and SMS are off on this service: no receipts are sent.');
}

export function settingsPage(ctx: PageContext): void {
  const form = byId<HTMLFormElement>('settings-form');
  const fields = byId<HTMLFieldSetElement>('settings-fields');
  fillSettings(form, ctx.me);
  fields.disabled = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFieldErrors(form);
    say(ctx.problem, '');
    // Only what changed is sent; a cleared field is sent as null (the merchant removes it).
    const data = new FormData(form);
    const body: Record<string, string | null> = {};
    for (const name of SETTINGS) {
      const now = String(data.get(name) ?? '').trim();
      const was = ctx.me[name] ?? '';
      if (now !== was) body[name] = now === '' ? null : name === 'country' ? now.toUpperCase() : now;
    }
    if (!Object.keys(body).length) {
      say(ctx.progress, 'Nothing to save: no field was changed.');
      return;
    }
    fields.disabled = true;
    say(ctx.progress, 'Saving…');
    try {
      ctx.me = { ...ctx.me, ...(await dash<Me>('PATCH', '/me', body)) };
      fillSettings(form, ctx.me);
      say(ctx.progress, 'Settings saved.');
    } catch (e) {
      showFieldErrors(form, e);
      fail(ctx, e);
    } finally {
      fields.disabled = false;
    }
  });
}

// ---- handle ---------------------------------------------------------------------------------------------

function showHandle(me: Pick<Me, 'handle' | 'handle_url'>): void {
  const link = byId<HTMLAnchorElement>('handle-url');
  byId('handle-current').hidden = !me.handle_url;
  byId('handle-none').hidden = Boolean(me.handle_url);
  if (me.handle_url) {
    link.href = me.handle_url;
    link.textContent = me.handle_url;
  }
  byId<HTMLInputElement>('handle-input').value = me.handle ?? '';
}

export function handlePage(ctx: PageContext): void {
  const form = byId<HTMLFormElement>('handle-form');
  const fields = byId<HTMLFieldSetElement>('handle-fields');
  showHandle(ctx.me);
  fields.disabled = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFieldErrors(form);
    say(ctx.problem, '');
    const handle = byId<HTMLInputElement>('handle-input').value.trim().toLowerCase();
    if (handle === (ctx.me.handle ?? '')) {
      say(ctx.progress, 'That is already your handle.');
      return;
    }
    fields.disabled = true;
    say(ctx.progress, 'Saving…');
    try {
      const saved = await dash<{ handle: string; handle_url: string }>('PUT', '/handle', { handle });
      ctx.me = { ...ctx.me, ...saved };
      showHandle(ctx.me);
      say(ctx.progress, 'Handle saved. Share your page link with your customers.');
    } catch (e) {
      if (e instanceof ApiError && (e.code === 'invalid_handle' || e.code === 'handle_taken')) fieldError(form, 'handle', explain(e));
      fail(ctx, e);
    } finally {
      fields.disabled = false;
    }
  });
}
