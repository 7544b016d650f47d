import { randomBytes, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { AppError } from '../../../common/errors';
import { currencyMismatch } from '../../../common/http/currency-assertion';
import { retryingDeadlocks } from '../../../database/pg-errors';
import { PAGE_DEFAULT } from '../../../common/paging';
import type { Merchant } from '../../merchants/merchant';
import { MerchantGate } from '../../merchants/merchant-gate.service';
import type { PaymentRequest } from '../../requests/domain/payment-request';
import { SERVICE_MODE_DEFAULT_EXPIRY_MINUTES } from '../../requests/domain/request-rules';
import { effectiveStatus } from '../../requests/domain/transitions';
import { RequestsService } from '../../requests/application/requests.service';
import { afterResume, changeOf, firstPeriod, missesAmong, START_AT_MAX_AHEAD_YEARS, startAtAllowed, type Plan, type PlanChange, type PlanStatus } from '../domain/plan';
import { dueAt, type PlanInterval } from '../domain/schedule';
import { PlansRepository } from '../infrastructure/plans.repository';
import { PLAN_CLOCK, type Clock } from './clock';
import { PlanChargesService, type ChargeOutcome } from './plan-charges.service';

export interface NewPlanInput {
  title: string;
  fiatAmount: number;
  /** The currency the form priced fiatAmount in: an assertion (spec §4.1's fiat_currency_code), not an override. */
  fiatCurrencyCode?: string;
  interval: PlanInterval;
  intervalCount?: number;
  startAt?: Date;
  maxCharges?: number;
  expiryMinutes?: number;
  payerName?: string;
  payerEmail?: string;
  metadata?: Record<string, string>;
}

/** An advance rolled back by a deadlock is run again, at most this many times in all. */
const ADVANCE_ATTEMPTS = 3;

/** A plan create that lost the race for its Idempotency-Key (see create). */
const KEY_TAKEN = Symbol('plan idempotency key taken');

export interface PlanPage {
  items: Plan[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

/** The payer's view of a plan (DESIGN §5 "The payer's page"). */
export interface PayerView {
  plan: Plan;
  /** The merchant as payers see it: display name, else business name. */
  merchantName: string | null;
  charges: PaymentRequest[];
  openCharge: PaymentRequest | null;
}

/** The plan's page token: 32 random bytes (256 bits) in base64url. */
const newToken = () => randomBytes(32).toString('base64url');

/**
 * The signed-in merchant's plans (DESIGN §5): create, read, pause, resume, cancel and the test clock's
 * advance. Every change locks the plan row first, so it serialises with the scheduler and with other changes.
 */
@Injectable()
export class PlansService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(PLAN_CLOCK) private readonly clock: Clock,
    private readonly dataSource: DataSource,
    private readonly plans: PlansRepository,
    private readonly charges: PlanChargesService,
    private readonly requests: RequestsService,
    private readonly merchants: MerchantGate,
  ) {}

  planUrl(p: Plan): string {
    return `${this.config.publicUrl}/plan/${p.token}`;
  }

  /**
   * A start_at that has come has its latest due period charged at once; next_charge_at is the one after. With an
   * Idempotency-Key the merchant's plan already made with it is returned instead (created false), before any
   * other check, as a request's replay is (DESIGN §3); two creates racing with one key make one plan.
   */
  async create(m: Merchant, input: NewPlanInput, idempotencyKey?: string): Promise<{ plan: Plan; created: boolean }> {
    // A body error, before the replay as the body's other checks are. Far ahead, next_charge_at left the
    // four-digit years ISO 8601 clients read (year 9999 gave "+010000-…").
    if (input.startAt && !startAtAllowed(input.startAt, this.clock.now())) {
      throw AppError.invalid([{ field: 'start_at', message: `start_at must be within ${START_AT_MAX_AHEAD_YEARS} years from now` }]);
    }
    const replay = idempotencyKey === undefined ? null : await this.plans.findByKey(m.id, idempotencyKey);
    if (replay) return { plan: replay, created: false };
    const current = await this.merchants.currentForCreate(m.id);
    if (!current || current.disabled) throw new AppError('merchant_disabled');
    const mismatch = currencyMismatch(input.fiatCurrencyCode, current.display_currency);
    if (mismatch) throw mismatch;
    const allowed = await this.charges.allowedExpiryMinutes(m.partnerId);
    const expiryMinutes = input.expiryMinutes ?? SERVICE_MODE_DEFAULT_EXPIRY_MINUTES;
    if (!allowed.includes(expiryMinutes)) throw new AppError('invalid_expiry_minutes', { allowed_expiry_minutes: allowed });
    const now = this.clock.now();
    const schedule = { startAt: input.startAt ?? now, interval: input.interval, intervalCount: input.intervalCount ?? 1 };
    const first = firstPeriod(schedule, now);
    const id = randomUUID();
    let outcome: ChargeOutcome | null = null;
    const made = await this.dataSource.transaction(async (em) => {
      const inserted = await this.plans.insert(em, {
        id,
        partnerId: m.partnerId,
        merchantId: m.id,
        testMode: m.testMode,
        token: newToken(),
        title: input.title,
        fiatAmount: input.fiatAmount,
        fiatCurrency: current.display_currency,
        interval: schedule.interval,
        intervalCount: schedule.intervalCount,
        startAt: schedule.startAt,
        maxCharges: input.maxCharges ?? null,
        expiryMinutes,
        payerName: input.payerName ?? null,
        payerEmail: input.payerEmail ?? null,
        metadata: input.metadata ?? {},
        status: 'active',
        nextPeriodIndex: first.k,
        nextChargeAt: dueAt(schedule, first.k),
      }, idempotencyKey ?? null);
      // The merchant changed its currency while this plan was being made (in another tab): nothing is kept.
      if (inserted === 'currency_changed') throw new AppError('conflict');
      // Thrown to roll back; the aborted insert is all there was.
      if (inserted === 'key_taken') throw KEY_TAKEN;
      if (first.dueNow) outcome = await this.charges.charge(em, await this.locked(em, m, id), first.k);
      return true;
    }).catch((e: unknown) => {
      if (e === KEY_TAKEN) return false;
      throw e;
    });
    if (!made) {
      // A create with the same key committed first: its plan is the answer.
      const winner = await this.plans.findByKey(m.id, idempotencyKey!);
      if (!winner) throw new Error(`plan with Idempotency-Key of merchant ${m.id} vanished`);
      return { plan: winner, created: false };
    }
    await this.charges.committed(outcome);
    return { plan: await this.get(m, id), created: true };
  }

  async list(m: Merchant, q: { status?: PlanStatus; limit?: number; offset?: number }): Promise<PlanPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const { items, hasMore } = await this.plans.list(m.id, { status: q.status, limit, offset });
    return { items, hasMore, limit, offset };
  }

  async get(m: Merchant, id: string): Promise<Plan> {
    const p = await this.plans.findOwned(m.id, id);
    if (!p) throw AppError.notFound();
    return p;
  }

  /** The plan's charges, oldest first. */
  chargesOf(p: Plan): Promise<PaymentRequest[]> {
    return this.requests.chargesOf(p.id);
  }

  async payerView(token: string): Promise<PayerView> {
    // 32 bytes in base64url: anything else names no plan, and costs no query.
    const plan = /^[A-Za-z0-9_-]{43}$/.test(token) ? await this.plans.findByToken(token) : null;
    if (!plan) throw AppError.notFound();
    const charges = await this.requests.chargesOf(plan.id);
    return { plan, merchantName: await this.merchants.payeeName(plan.merchantId), charges, openCharge: openCharge(charges, new Date()) };
  }

  /**
   * → paused (reason merchant). Already paused by the merchant: unchanged. Paused for unpaid: the pause becomes
   * the merchant's, so a charge paid late no longer resumes it (afterPaid); only /resume does.
   * Canceled or completed: 409 plan_not_active.
   */
  pause(m: Merchant, id: string): Promise<Plan> {
    return this.change(m, id, (p) => {
      if (p.status === 'paused') return p.pauseReason === 'merchant' ? null : { ...changeOf(p), pauseReason: 'merchant' };
      if (p.status !== 'active') throw new AppError('plan_not_active');
      return { ...changeOf(p), status: 'paused', pauseReason: 'merchant', nextChargeAt: null };
    });
  }

  /** → active, the next charge at the first scheduled date from now on (the real clock), nothing backfilled. */
  resume(m: Merchant, id: string): Promise<Plan> {
    return this.change(m, id, (p) => {
      if (p.status === 'active') return null;
      if (p.status !== 'paused') throw new AppError('plan_not_active');
      return afterResume(p, this.clock.now());
    });
  }

  /** → canceled, final. The open charge stays payable. */
  cancel(m: Merchant, id: string): Promise<Plan> {
    return this.change(m, id, (p) => {
      if (p.status === 'canceled') return null;
      if (p.status === 'completed') throw new AppError('plan_not_active');
      return { ...changeOf(p), status: 'canceled', pauseReason: null, nextChargeAt: null };
    });
  }

  /**
   * The test clock (DESIGN §5, §8): the open charge, if unpaid, expires now and counts as missed; then, unless
   * that paused the plan, the next period's charge is created now as the scheduler would. Concurrent advances
   * queue on the plan's lock, each moving one period.
   */
  async advance(m: Merchant, id: string): Promise<Plan> {
    // The advance locks the plan, then its open charge; the expiry job, the sweep and a verification lock a
    // charge, then its plan. When one of them holds the open charge meanwhile, Postgres ends the cycle by
    // rolling one transaction back: the advance, rolled back whole, is simply run again on what is stored then.
    return retryingDeadlocks(ADVANCE_ATTEMPTS, () => this.advanceOnce(m, id));
  }

  private async advanceOnce(m: Merchant, id: string): Promise<Plan> {
    let outcome: ChargeOutcome | null = null;
    const after = await this.dataSource.transaction(async (em) => {
      let plan = await this.locked(em, m, id);
      if (!plan.testMode) throw new AppError('test_mode_only');
      if (plan.status !== 'active') throw new AppError('plan_not_active');
      // A charge that lapsed while its expiry job is late counts its miss first, as the job would have.
      if (await this.charges.storeLapsed(em, plan)) plan = await this.locked(em, m, id);
      if (plan.status !== 'active') return plan;
      // In the transaction: it sees the expiries storeLapsed just wrote, and takes no second connection.
      const open = openCharge(await this.requests.chargesOf(plan.id, em), new Date());
      if (open && open.proofStatus === 'none' && (await this.requests.expireNow(em, open.id))) {
        const missed = missesAmong([open.periodIndex!], await this.requests.latestPaidPeriod(em, plan.id));
        if (missed > 0) await this.plans.countMissed(em, plan.id, missed, this.config.planMaxMissed);
        plan = await this.locked(em, m, id);
      }
      if (plan.status !== 'active') return plan;
      const merchant = await this.merchants.currentForCreate(m.id, em);
      if (!merchant || merchant.disabled) throw new AppError('merchant_disabled');
      outcome = await this.charges.charge(em, plan, plan.nextPeriodIndex);
      return this.locked(em, m, id);
    });
    await this.charges.committed(outcome);
    return after;
  }

  /**
   * Answers the plan as this change left it, read under its lock: read after the commit, it could already show
   * the change queued behind this one (two advances in a row both answering the second's status).
   */
  private async change(m: Merchant, id: string, decide: (p: Plan) => PlanChange | null): Promise<Plan> {
    return this.dataSource.transaction(async (em) => {
      const plan = await this.locked(em, m, id);
      const next = decide(plan);
      if (!next) return plan;
      await this.plans.update(em, plan.id, next);
      return this.locked(em, m, id);
    });
  }

  private async locked(em: EntityManager, m: Merchant, id: string): Promise<Plan> {
    const p = await this.plans.findOwned(m.id, id, { em, forUpdate: true });
    if (!p) throw AppError.notFound();
    return p;
  }
}

/** DESIGN §8: the latest charge that is neither verified nor expired nor voided, else null. */
export function openCharge(charges: readonly PaymentRequest[], now: Date): PaymentRequest | null {
  for (let i = charges.length - 1; i >= 0; i--) {
    const c = charges[i];
    const status = effectiveStatus(c, now);
    if (c.proofStatus !== 'verified' && status !== 'expired' && status !== 'voided') return c;
  }
  return null;
}

