import type { PayerView } from '../plans/application/plans.service';
import { scheduleOf, type Plan } from '../plans/domain/plan';
import { dueAt, type PlanInterval } from '../plans/domain/schedule';
import type { PaymentRequest } from '../requests/domain/payment-request';
import { effectiveStatus } from '../requests/domain/transitions';
import { formatFiat } from './format';
import { html, pageDocument, type SafeHtml } from './html';

const UNIT: Record<PlanInterval, [string, string]> = { day: ['day', 'days'], week: ['week', 'weeks'], month: ['month', 'months'], year: ['year', 'years'] };

const longDate = (d: Date) =>
  new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(d) + ' UTC';

/** "every month", "every 2 weeks". */
export function scheduleWords(interval: PlanInterval, count: number): string {
  return count === 1 ? `every ${UNIT[interval][0]}` : `every ${count} ${UNIT[interval][1]}`;
}

/** What the plan's state means for the payer, in words. */
export function planStateWords(p: Plan): string {
  switch (p.status) {
    case 'active':
      return p.nextChargeAt ? `Next charge: ${longDate(p.nextChargeAt)}.` : 'Active.';
    case 'paused':
      return p.pauseReason === 'unpaid'
        ? 'This plan is paused because charges went unpaid. No new charges are made until the merchant resumes it, or until a payment already sent for a missed charge is confirmed.'
        : 'This plan is paused by the merchant. No new charges are made until it is resumed.';
    case 'canceled':
      return 'This plan was canceled. No more charges will be made.';
    case 'completed':
      return `This plan is complete: all ${p.chargesCreated} charges were made.`;
  }
}

function chargeWords(c: PaymentRequest, now: Date): string {
  if (c.proofStatus === 'verified') return 'Paid';
  const status = effectiveStatus(c, now);
  if (status === 'voided') return 'Canceled';
  if (status === 'expired') return 'Not paid (expired)';
  if (c.proofStatus === 'attached') return 'Payment being confirmed';
  return 'Awaiting payment';
}

/**
 * The open charge (DESIGN §8: neither verified nor expired nor voided). One whose payment is already sent and
 * being confirmed is not offered as "Payment due" with a Pay button, which invited a second payment: the link
 * leads to its pay page, which follows the confirmation.
 */
function openChargeCard(c: PaymentRequest, p: Plan, fiat: string, payUrl: string): SafeHtml {
  const period = c.periodIndex !== null ? html` for ${longDate(dueAt(scheduleOf(p), c.periodIndex))}` : '';
  if (c.proofStatus === 'attached') {
    return html`<section class="card" id="open-charge" aria-labelledby="open-heading">
<h2 id="open-heading">Payment being confirmed</h2>
<p>A payment of ${fiat}${period} has been sent and is being confirmed on chain. Nothing more to pay for it.</p>
<a class="button" id="pay-link" href="${payUrl}/${c.id}">View the payment</a>
</section>`;
  }
  return html`<section class="card" id="open-charge" aria-labelledby="open-heading">
<h2 id="open-heading">Payment due</h2>
<p>${fiat} is due${period}. Pay it before ${longDate(c.expiresAt)}.</p>
<a class="button primary" id="pay-link" href="${payUrl}/${c.id}">Pay ${fiat}</a>
</section>`;
}

/** The payer's plan page (DESIGN §5): no script; the Pay button is a link to the open charge's pay page. */
export function renderPlanPage(v: PayerView, payUrl: string, stylesheet: string, now: Date): string {
  const p = v.plan;
  const fiat = formatFiat(p.fiatAmount, p.fiatCurrency);
  const merchant = v.merchantName ?? 'A merchant';
  const rows: SafeHtml[] = [...v.charges].reverse().map(
    (c) => html`<li data-period="${c.periodIndex ?? ''}"><span>${c.periodIndex === null ? '' : longDate(dueAt(scheduleOf(p), c.periodIndex))}</span> <strong class="charge-state">${chargeWords(c, now)}</strong></li>`,
  );
  return pageDocument({
    title: `${p.title}: ${fiat} ${scheduleWords(p.interval, p.intervalCount)}`,
    stylesheet,
    body: html`<main id="plan" data-status="${p.status}">
<section class="card" aria-labelledby="plan-title">
<p class="eyebrow">Recurring plan from ${merchant}${p.testMode ? html` <span class="badge">Test mode: no real money</span>` : ''}</p>
<h1 id="plan-title">${p.title}</h1>
<p class="amount-fiat" id="plan-amount">${fiat}</p>
<p id="plan-schedule">${fiat} ${scheduleWords(p.interval, p.intervalCount)}, from ${longDate(p.startAt)}${p.maxCharges !== null ? `, ${p.maxCharges} charges in all` : ''}.</p>
<p class="status-title" id="plan-state" role="status">${planStateWords(p)}</p>
</section>
${v.openCharge ? openChargeCard(v.openCharge, p, fiat, payUrl) : html`<section class="card" id="no-open-charge"><p>Nothing to pay right now.</p></section>`}
<section class="card" aria-labelledby="history-heading">
<h2 id="history-heading">Charges</h2>
${rows.length > 0 ? html`<ul class="plan-history" id="history">${rows}</ul>` : html`<p id="history">No charges yet.</p>`}
</section>
</main>`,
  });
}
