import { iso } from '../../../common/time';
import { effectiveStatus } from '../../requests/domain/transitions';
import type { PayerView } from '../application/plans.service';
import type { Plan } from '../domain/plan';

/** The plan object of DESIGN §5 (without `ok`). */
export function planJson(p: Plan, planUrl: string) {
  return {
    plan_id: p.id,
    status: p.status,
    pause_reason: p.pauseReason,
    title: p.title,
    fiat_amount: p.fiatAmount,
    fiat_currency: p.fiatCurrency,
    interval: p.interval,
    interval_count: p.intervalCount,
    start_at: iso(p.startAt),
    next_charge_at: p.status === 'active' ? iso(p.nextChargeAt) : null,
    charges_created: p.chargesCreated,
    max_charges: p.maxCharges,
    expiry_minutes: p.expiryMinutes,
    payer_name: p.payerName,
    payer_email: p.payerEmail,
    metadata: p.metadata,
    plan_url: planUrl,
    created_at: iso(p.createdAt),
  };
}

/** `GET /plan/api/<token>` (DESIGN §5): what the payer sees; no metadata, no payer details. */
export function payerJson(v: PayerView, payUrl: string, now: Date) {
  const { plan: p, openCharge: open } = v;
  return {
    ok: true,
    title: p.title,
    fiat_amount: p.fiatAmount,
    fiat_currency: p.fiatCurrency,
    interval: p.interval,
    interval_count: p.intervalCount,
    status: p.status,
    next_charge_at: p.status === 'active' ? iso(p.nextChargeAt) : null,
    open_charge: open ? { request_id: open.id, pay_page_url: `${payUrl}/${open.id}`, expires_at: iso(open.expiresAt) } : null,
    charges: v.charges.map((c) => ({
      request_id: c.id,
      period_index: c.periodIndex,
      status: effectiveStatus(c, now),
      proof_status: c.proofStatus,
      created_at: iso(c.createdAt),
    })),
  };
}
