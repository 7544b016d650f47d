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
   * the handle is inserted, or taken back when it is the merchant's own retired one. False when another
   * merchant holds or once held it (the row exists and is theirs; the transaction is rolled back).
   */
  async claim(merchantId: string, handle: string): Promise<boolean> {
    return this.handles.manager.transaction(async (em) => {
      // Serialises one merchant's claims, so the retire-then-insert below never races its own twin.
      await em.query(`SELECT pg_advisory_xact_lock(hashtext('merchant_handles'), hashtext($1))`, [merchantId]);
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
      if (rows.length === 1) return true;
      // Someone else's: undo the retirement above, the merchant keeps its handle.
      throw new HandleTaken();
    }).catch((e: unknown) => {
      if (e instanceof HandleTaken) return false;
      throw e;
    });
  }
}

class HandleTaken extends Error {}
