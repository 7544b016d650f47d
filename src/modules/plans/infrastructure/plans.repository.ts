import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { isCheckViolation, isUniqueViolation } from '../../../database/pg-errors';
import type { Plan, PlanChange, PlanStatus } from '../domain/plan';
import { PlanEntity } from './plan.entity';

export type NewPlan = Omit<Plan, 'createdAt' | 'status' | 'pauseReason' | 'chargesCreated' | 'missedInRow'> & { status: 'active' };

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
      await this.repo(em).insert({ ...p, idempotencyKey, pauseReason: null, chargesCreated: 0, missedInRow: 0 });
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

  /**
   * Locks the next active plan due at `now` that no other worker holds (SKIP LOCKED), in em's transaction:
   * two workers never charge one plan at once, and neither waits for the other.
   */
  async lockNextDue(em: EntityManager, now: Date, except: readonly string[] = []): Promise<Plan | null> {
    const q = this.repo(em)
      .createQueryBuilder('p')
      .where(`p.status = 'active' AND p.next_charge_at <= :now`, { now });
    if (except.length > 0) q.andWhere('p.id <> ALL(:except)', { except });
    const e = await q
      .orderBy('p.next_charge_at', 'ASC')
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

  /** A charge of the plan was paid: the missed count starts again. */
  async resetMissed(em: EntityManager, planId: string): Promise<void> {
    await this.repo(em).update({ id: planId }, { missedInRow: 0, updatedAt: () => 'now()' });
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
    createdAt: e.createdAt,
  };
}
