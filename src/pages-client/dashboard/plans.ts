import { amountProblem, parseFiat } from '../../modules/pages/format';
import { ApiError } from '../lib/api';
import { byId, say } from '../lib/dom';
import { clearFieldErrors, fieldError, formValues, showFieldErrors } from './forms';
import { newIdempotencyKey } from '../lib/idempotency';
import { fail, type PageContext } from './pages';
import { el, fillDetails, money, requestItem, when } from './render';
import { dash } from './session';
import type { DashboardRequest } from './types';
import { explain } from './words';

/** The plan object of DESIGN §5, as the pages read it. */
interface Plan {
  plan_id: string;
  status: 'active' | 'paused' | 'canceled' | 'completed';
  pause_reason: 'merchant' | 'unpaid' | null;
  title: string;
  fiat_amount: number;
  fiat_currency: string;
  interval: string;
  interval_count: number;
  start_at: string;
  next_charge_at: string | null;
  charges_created: number;
  max_charges: number | null;
  expiry_minutes: number;
  payer_name: string | null;
  payer_email: string | null;
  metadata: Record<string, string>;
  plan_url: string;
  charges?: DashboardRequest[];
}

const UNITS: Record<string, [string, string]> = { day: ['day', 'days'], week: ['week', 'weeks'], month: ['month', 'months'], year: ['year', 'years'] };

export function everyWords(p: Pick<Plan, 'interval' | 'interval_count'>): string {
  const [one, many] = UNITS[p.interval] ?? [p.interval, p.interval];
  return p.interval_count === 1 ? `every ${one}` : `every ${p.interval_count} ${many}`;
}

function planState(p: Plan): { text: string; tone: 'ok' | 'warn' | 'bad' | 'info' } {
  switch (p.status) {
    case 'active':
      return { text: 'Active', tone: 'ok' };
    case 'paused':
      return { text: p.pause_reason === 'unpaid' ? 'Paused: charges went unpaid' : 'Paused', tone: 'warn' };
    case 'canceled':
      return { text: 'Cancelled', tone: 'bad' };
    case 'completed':
      return { text: 'Completed', tone: 'info' };
  }
}

const badge = (p: Plan) => {
  const s = planState(p);
  return el('span', { class: `state state-${s.tone}` }, s.text);
};

function planItem(p: Plan): HTMLLIElement {
  const meta = [`${money(p)} ${everyWords(p)}`, p.payer_name ?? p.payer_email ?? '', p.next_charge_at ? `next ${when(p.next_charge_at)}` : ''].filter(Boolean).join(' · ');
  return el(
    'li',
    { 'data-plan-id': p.plan_id },
    el(
      'a',
      { href: `/dashboard/plans/${p.plan_id}`, class: 'req-item' },
      el('span', { class: 'req-top' }, el('strong', { class: 'req-amount' }, p.title), badge(p)),
      el('span', { class: 'req-meta' }, meta),
    ),
  );
}

export async function plansPage(): Promise<void> {
  const page = await dash<{ plans: Plan[] }>('GET', '/plans?limit=100');
  byId('plan-list').replaceChildren(...page.plans.map(planItem));
  byId('plan-empty').hidden = page.plans.length > 0;
}

/** "key=value" lines → metadata; null when a line is not of that shape. */
function parseMetadata(text: string): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n|;/).map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf('=');
    if (at <= 0) return null;
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

export function newPlanPage(ctx: PageContext): void {
  const currency = ctx.me.display_currency ?? 'usd';
  const form = byId<HTMLFormElement>('plan-form');
  const fields = byId<HTMLFieldSetElement>('plan-fields');
  document.querySelector('label[for="plan-amount"]')!.textContent = `Amount each period, in ${currency.toUpperCase()}`;
  if (ctx.me.disabled) fields.disabled = true;
  // The same key for every submit of this form: a retry after a lost answer returns the plan already made,
  // never a second plan charging the same payer.
  const idempotencyKey = newIdempotencyKey();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFieldErrors(form);
    say(ctx.problem, '');
    const v = formValues(form, ['title', 'amount', 'interval_count', 'interval', 'start_at', 'max_charges', 'payer_name', 'payer_email', 'expiry_minutes', 'metadata']);
    const amount = parseFiat(v.amount ?? '', currency);
    const problems: [string, string][] = [];
    if (!v.title) problems.push(['title', 'Give the plan a title.']);
    if (amount === null) problems.push(['amount', amountProblem(v.amount ?? '', currency, '25.00')]);
    for (const k of ['interval_count', 'max_charges', 'expiry_minutes'] as const) {
      if (v[k] && !/^\d+$/.test(v[k])) problems.push([k, 'Use a whole number, or leave it empty.']);
    }
    const metadata = parseMetadata(v.metadata ?? '');
    if (metadata === null) problems.push(['metadata', 'Write one key=value pair per line.']);
    if (problems.length) {
      for (const [name, text] of problems) fieldError(form, name, text);
      return;
    }
    const body: Record<string, unknown> = { title: v.title, fiat_amount_int: amount, fiat_currency_code: currency, interval: v.interval || 'month' };
    if (v.interval_count) body.interval_count = Number(v.interval_count);
    if (v.max_charges) body.max_charges = Number(v.max_charges);
    if (v.expiry_minutes) body.expiry_minutes = Number(v.expiry_minutes);
    if (v.start_at) body.start_at = new Date(v.start_at).toISOString();
    for (const k of ['payer_name', 'payer_email'] as const) if (v[k]) body[k] = v[k];
    if (metadata && Object.keys(metadata).length) body.metadata = metadata;
    fields.disabled = true;
    say(ctx.progress, 'Creating the plan…');
    try {
      const created = await dash<Plan>('POST', '/plans', body, { 'idempotency-key': idempotencyKey });
      location.assign(`/dashboard/plans/${created.plan_id}`);
    } catch (e) {
      showFieldErrors(form, e, { fiat_amount_int: 'amount' });
      if (e instanceof ApiError && e.code === 'invalid_expiry_minutes') fieldError(form, 'expiry_minutes', explain(e));
      fail(ctx, e);
      fields.disabled = false;
    }
  });
}

function showPlan(p: Plan, testMode: boolean): void {
  byId('plan-name').textContent = p.title;
  byId('plan-state').replaceWith(Object.assign(badge(p), { id: 'plan-state' }));
  const payerPage = el('a', { href: p.plan_url, id: 'plan-url' }, p.plan_url);
  const meta = Object.entries(p.metadata).map(([k, v]) => `${k}=${v}`).join(', ');
  fillDetails(byId('plan-fields-list'), [
    ['Amount', `${money(p)} ${everyWords(p)}`],
    ['First charge', when(p.start_at)],
    ['Next charge', p.next_charge_at ? when(p.next_charge_at) : null],
    ['Charges made', p.max_charges === null ? String(p.charges_created) : `${p.charges_created} of ${p.max_charges}`],
    ['Each charge expires after', `${p.expiry_minutes} minutes`],
    ['Payer', [p.payer_name, p.payer_email].filter(Boolean).join(', ')],
    ['Payer’s page', payerPage],
    ['Metadata', meta],
  ]);
  // A plan paused because charges went unpaid resumes by itself when a payment leaves too few misses; pausing
  // it again makes the pause the merchant's, so it stays paused until the merchant resumes it.
  const unpaid = p.status === 'paused' && p.pause_reason === 'unpaid';
  byId('plan-pause').hidden = p.status !== 'active' && !unpaid;
  byId('plan-pause').textContent = unpaid ? 'Keep paused' : 'Pause';
  byId('plan-resume').hidden = p.status !== 'paused';
  byId('plan-cancel').hidden = p.status === 'canceled' || p.status === 'completed';
  byId('plan-advance').hidden = !(testMode && p.status === 'active');
  const charges = p.charges ?? [];
  byId('charge-list').replaceChildren(...charges.map(requestItem));
  byId('charge-empty').hidden = charges.length > 0;
}

export async function planPage(ctx: PageContext): Promise<void> {
  const id = encodeURIComponent(ctx.root.dataset.planId!);
  const reload = async () => showPlan(await dash<Plan>('GET', `/plans/${id}`), ctx.me.test_mode);
  await reload();
  const actions: [string, string, string, string | null][] = [
    ['plan-pause', 'pause', 'The plan is paused: no new charges until you resume it.', null],
    ['plan-resume', 'resume', 'The plan is active again.', null],
    ['plan-cancel', 'cancel', 'The plan was cancelled.', 'Cancel this plan? No more charges will be made; the open charge stays payable.'],
    ['plan-advance', 'advance', 'Moved to the next period (test clock).', null],
  ];
  for (const [buttonId, action, done, confirmText] of actions) {
    const button = byId<HTMLButtonElement>(buttonId);
    button.addEventListener('click', async () => {
      if (confirmText && !window.confirm(confirmText)) return;
      button.disabled = true;
      say(ctx.problem, '');
      try {
        await dash<Plan>('POST', `/plans/${id}/${action}`);
        await reload();
        say(ctx.progress, done);
      } catch (e) {
        fail(ctx, e);
      } finally {
        button.disabled = false;
      }
    });
  }
}
