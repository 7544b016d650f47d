import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { MerchantHandleEntity } from './merchant-handle.entity';

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
   * the handle is inserted, or taken back when it is the merchant's own retired one. 'taken' when another
   * merchant holds or once held it (the row exists and is theirs; the transaction is rolled back).
   * 'limited' when the merchant already claimed `limit.count` new handles within `limit.windowMs`.
   */
  async claim(merchantId: string, handle: string, limit: { count: number; windowMs: number }): Promise<'claimed' | 'taken' | 'limited'> {
    return this.handles.manager.transaction(async (em): Promise<'claimed' | 'limited'> => {
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
      if (!own && recent >= limit.count) return 'limited';
      await em.query(`UPDATE merchant_handles SET retired_at = now() WHERE merchant_id = $1 AND retired_at IS NULL AND handle <> $2`, [
        merchantId,
        handle,
      ]);
      const rows = await em.query<unknown[]>(
        `INSERT INTO merchant_handles (handle, merchant_id) VALUES ($1, $2)
         ON CONFLICT (handle) DO UPDATE SET retired_at = NULL WHERE merchant_handles.merchant_id = EXCLUDED.merchant_id
         RETURNING handle`,
        [handle, merchantId],
      );
      if (rows.length === 1) return 'claimed';
      // Someone else's: undo the retirement above, the merchant keeps its handle.
      throw new HandleTaken();
    }).catch((e: unknown) => {
      if (e instanceof HandleTaken) return 'taken' as const;
      throw e;
    });
  }
}

class HandleTaken extends Error {}
