import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { isCheckViolation, isUniqueViolation } from '../../../database/pg-errors';
import type { Plan, PlanChange, PlanStatus } from '../domain/plan';
import { PlanEntity } from './plan.entity';

export type NewPlan = Omit<
  Plan,
  'createdAt' | 'status' | 'pauseReason' | 'chargesCreated' | 'missedInRow' | 'latestChargePeriod' | 'chargeFailures' | 'retryAt'
> & { status: 'active' };

/** plans: the only place that reads or writes it. Returns domain plans, never entities. */
@Injectable()
export class PlansRepository {
  constructor(@InjectRepository(PlanEntity) private readonly plans: Repository<PlanEntity>) {}

  private repo(em?: EntityManager): Repository<PlanEntity> {
    return em ? em.getRepository(PlanEntity) : this.plans;
  }

  /**
   * Inserts the plan unless the schema refuses it, em's transaction then aborted: 'currency_changed' when the
   * merchant's currency is no longer the plan's (changed since the caller read it: plans_merchant_currency_holds),
   * 'key_taken' when another plan of the merchant holds the Idempotency-Key (a create racing this one: the
   * insert waited for its commit).
   */
  async insert(em: EntityManager, p: NewPlan, idempotencyKey: string | null): Promise<'inserted' | 'currency_changed' | 'key_taken'> {
    try {
      await this.repo(em).insert({
        ...p, idempotencyKey, pauseReason: null, chargesCreated: 0, missedInRow: 0, latestChargePeriod: null, chargeFailures: 0, retryAt: null,
      });
      return 'inserted';
    } catch (e) {
      if (isCheckViolation(e, 'plans_merchant_currency_holds')) return 'currency_changed';
      if (isUniqueViolation(e, 'plans_idempotency')) return 'key_taken';
      throw e;
    }
  }

  /** The merchant's plan made with this Idempotency-Key. */
  async findByKey(merchantId: string, idempotencyKey: string): Promise<Plan | null> {
    const e = await this.plans.findOneBy({ merchantId, idempotencyKey });
    return e ? toDomain(e) : null;
  }

  /** One merchant's plan; forUpdate needs em's transaction and serialises every change of the plan. */
  async findOwned(merchantId: string, id: string, opts: { em?: EntityManager; forUpdate?: boolean } = {}): Promise<Plan | null> {
    const e = await this.repo(opts.em).findOne({ where: { id, merchantId }, lock: opts.forUpdate ? { mode: 'pessimistic_write' } : undefined });
    return e ? toDomain(e) : null;
  }

  async findByToken(token: string): Promise<Plan | null> {
    const e = await this.plans.findOneBy({ token });
    return e ? toDomain(e) : null;
  }

  async list(merchantId: string, f: { status?: PlanStatus; limit: number; offset: number }): Promise<{ items: Plan[]; hasMore: boolean }> {
    const rows = await this.plans.find({
      where: { merchantId, ...(f.status ? { status: f.status } : {}) },
      order: { createdAt: 'ASC', id: 'ASC' },
      take: f.limit + 1,
      skip: f.offset,
    });
    return { items: rows.slice(0, f.limit).map(toDomain), hasMore: rows.length > f.limit };
  }

  /** Any plan, locked in em's transaction (every change of a plan takes this lock first). */
  async lock(em: EntityManager, id: string): Promise<Plan | null> {
    const e = await this.repo(em).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
    return e ? toDomain(e) : null;
  }

  /**
   * Locks the next active plan due at `now` that no other worker holds (SKIP LOCKED), in em's transaction:
   * two workers never charge one plan at once, and neither waits for the other. A plan whose charge failed
   * is due again at its retry_at, and sorts by it (plans_due): behind every plan that came due before it, so
   * plans that keep failing never starve the others (each is tried at most once before a plan due earlier).
   */
  async lockNextDue(em: EntityManager, now: Date, except: readonly string[] = []): Promise<Plan | null> {
    const q = this.repo(em)
      .createQueryBuilder('p')
      .where(`p.status = 'active' AND GREATEST(p.next_charge_at, p.retry_at) <= :now`, { now });
    if (except.length > 0) q.andWhere('p.id <> ALL(:except)', { except });
    const e = await q
      .orderBy('GREATEST(p.next_charge_at, p.retry_at)', 'ASC')
      .limit(1)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getOne();
    return e ? toDomain(e) : null;
  }

  async update(em: EntityManager, id: string, c: PlanChange): Promise<void> {
    await this.repo(em).update({ id }, { ...c, updatedAt: () => 'now()' });
  }

  /**
   * A failed charge attempt, stored after its transaction rolled back, so without the plan's lock: only if the
   * plan is still as `seen` (active, the same due time, the same failures), never over a worker that has
   * charged, skipped or failed it since. False when it was not.
   */
  async recordFailure(seen: Plan, c: PlanChange): Promise<boolean> {
    const [, n] = await this.plans.query<[unknown[], number]>(
      `UPDATE plans SET charge_failures = $4, retry_at = $5, updated_at = now()
        WHERE id = $1 AND status = 'active' AND next_charge_at = $2 AND charge_failures = $3`,
      [seen.id, seen.nextChargeAt, seen.chargeFailures, c.chargeFailures, c.retryAt],
    );
    return n > 0;
  }

  /**
   * Charges of these plans expired unpaid: each counts as missed, and `maxMissed` in a row pause an active plan
   * with reason unpaid. One statement per plan, in the expiring transaction, so a miss is counted exactly once.
   */
  async countMissed(em: EntityManager, planId: string, missed: number, maxMissed: number): Promise<void> {
    await em.query(
      `UPDATE plans SET missed_in_row = missed_in_row + $2,
              status = CASE WHEN status = 'active' AND missed_in_row + $2 >= $3 THEN 'paused' ELSE status END,
              pause_reason = CASE WHEN status = 'active' AND missed_in_row + $2 >= $3 THEN 'unpaid' ELSE pause_reason END,
              next_charge_at = CASE WHEN status = 'active' AND missed_in_row + $2 >= $3 THEN NULL ELSE next_charge_at END,
              updated_at = now()
        WHERE id = $1`,
      [planId, missed, maxMissed],
    );
  }

}

function toDomain(e: PlanEntity): Plan {
  return {
    id: e.id,
    partnerId: e.partnerId,
    merchantId: e.merchantId,
    testMode: e.testMode,
    token: e.token,
    title: e.title,
    fiatAmount: e.fiatAmount,
    fiatCurrency: e.fiatCurrency,
    interval: e.interval,
    intervalCount: e.intervalCount,
    startAt: e.startAt,
    maxCharges: e.maxCharges,
    expiryMinutes: e.expiryMinutes,
    payerName: e.payerName,
    payerEmail: e.payerEmail,
    metadata: e.metadata,
    status: e.status,
    pauseReason: e.pauseReason,
    nextPeriodIndex: e.nextPeriodIndex,
    nextChargeAt: e.nextChargeAt,
    chargesCreated: e.chargesCreated,
    missedInRow: e.missedInRow,
    latestChargePeriod: e.latestChargePeriod,
    chargeFailures: e.chargeFailures,
    retryAt: e.retryAt,
    createdAt: e.createdAt,
  };
}
