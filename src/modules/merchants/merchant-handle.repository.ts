import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { MerchantHandleEntity } from './merchant-handle.entity';
import { retryingDeadlocks } from '../../database/pg-errors';

/** The merchant_handles table: the only reader and writer of it. */
@Injectable()
export class MerchantHandleRepository {
  constructor(@InjectRepository(MerchantHandleEntity) private readonly handles: Repository<MerchantHandleEntity>) {}

  /** The merchant's current handle, or null. */
  async currentOf(merchantId: string): Promise<string | null> {
    const row = await this.handles.findOneBy({ merchantId, retiredAt: IsNull() });
    return row?.handle ?? null;
  }

  /** The merchant a current (not retired) handle names. */
  async merchantOf(handle: string): Promise<string | null> {
    const row = await this.handles.findOneBy({ handle, retiredAt: IsNull() });
    return row?.merchantId ?? null;
  }

  /**
   * Makes `handle` the merchant's current one in one transaction: its other current handle is retired, then
   * the handle is inserted, or taken back when it is the merchant's own retired one, or taken over when the
   * claimer is a live merchant and the handle is (or was) a test merchant's: 'taken_from_test' then, with the
   * test merchant it came from. Test merchants cost nothing, so a sandbox key could otherwise retire any
   * number of names for good (an abuse hunt: 20 handles a second), as it could hold wallets (README,
   * "A test key cannot keep a wallet from its owner's live merchant"). 'taken' when another merchant holds or
   * once held it otherwise (the transaction is rolled back). 'limited' when the merchant already claimed
   * `limit.count` new handles within `limit.windowMs` (a handle taken over counts as new).
   */
  async claim(
    merchantId: string,
    handle: string,
    limit: { count: number; windowMs: number },
  ): Promise<{ outcome: 'claimed' | 'taken' | 'limited' } | { outcome: 'taken_from_test'; from: string }> {
    // Two merchants each claiming the other's handle lock in opposite orders (the wanted row, then the held one);
    // Postgres ends that cycle by rolling one back, which then runs again and finds the handle taken.
    return retryingDeadlocks(3, () => this.handles.manager.transaction(async (em) => {
      // Serialises one merchant's claims, so the retire-then-insert below never races its own twin, and the
      // count below cannot be passed by claims running side by side.
      await em.query(`SELECT pg_advisory_xact_lock(hashtext('merchant_handles'), hashtext($1))`, [merchantId]);
      // Every new handle keeps its row forever: rows created in the window are the merchant's recent claims.
      // Taking back a handle of its own adds no row, so it is never refused.
      const [{ recent, own }] = await em.query<{ recent: number; own: boolean }[]>(
        `SELECT count(*) FILTER (WHERE created_at > now() - $3 * interval '1 millisecond')::int AS recent,
                coalesce(bool_or(handle = $2), false) AS own
           FROM merchant_handles WHERE merchant_id = $1`,
        [merchantId, handle, Math.trunc(limit.windowMs)],
      );
      if (!own && recent >= limit.count) return { outcome: 'limited' as const };
      // The handle's row as it is, held until the end: a racing claim of it waits here.
      const [held] = await em.query<{ merchant_id: string; test_mode: boolean; claimer_live: boolean }[]>(
        `SELECT h.merchant_id, holder.test_mode, NOT claimer.test_mode AS claimer_live
           FROM merchant_handles h JOIN merchants holder ON holder.id = h.merchant_id, merchants claimer
          WHERE h.handle = $1 AND claimer.id = $2
          FOR UPDATE OF h`,
        [handle, merchantId],
      );
      const takeover = held !== undefined && held.merchant_id !== merchantId && held.test_mode && held.claimer_live;
      await em.query(`UPDATE merchant_handles SET retired_at = now() WHERE merchant_id = $1 AND retired_at IS NULL AND handle <> $2`, [
        merchantId,
        handle,
      ]);
      const rows = await em.query<unknown[]>(
        `INSERT INTO merchant_handles (handle, merchant_id) VALUES ($1, $2)
         ON CONFLICT (handle) DO UPDATE
            SET retired_at = NULL, merchant_id = EXCLUDED.merchant_id,
                created_at = CASE WHEN merchant_handles.merchant_id = EXCLUDED.merchant_id THEN merchant_handles.created_at ELSE now() END
          WHERE merchant_handles.merchant_id = EXCLUDED.merchant_id OR $3
         RETURNING handle`,
        [handle, merchantId, takeover],
      );
      if (rows.length !== 1) throw new HandleTaken(); // someone else's: the retirement above is undone
      return takeover ? { outcome: 'taken_from_test' as const, from: held.merchant_id } : { outcome: 'claimed' as const };
    })).catch((e: unknown) => {
      if (e instanceof HandleTaken) return { outcome: 'taken' as const };
      throw e;
    });
  }
}

class HandleTaken extends Error {}
