import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ChainCursorEntity } from './chain-cursor.entity';

/** chain_cursors: how far the chain scan has read each asset's transfers. */
@Injectable()
export class ChainCursorsRepository {
  /**
   * One scan per chain and token at a time, whatever the number of workers: a lock that em's transaction
   * holds until it ends. False when another scan holds it.
   */
  async tryLockScan(em: EntityManager, chainId: bigint, token: string): Promise<boolean> {
    const [lock] = await em.query<{ ok: boolean }[]>(
      `SELECT pg_try_advisory_xact_lock(hashtext('chain-scan:' || $1 || ':' || $2)) AS ok`,
      [chainId.toString(), token],
    );
    return lock.ok;
  }

  async lastBlock(em: EntityManager, chainId: bigint, token: string): Promise<number | null> {
    const cursor = await em.getRepository(ChainCursorEntity).findOneBy({ chainId, tokenAddress: token });
    return cursor ? Number(cursor.lastBlock) : null;
  }

  /** The block handled last and its time (the time is what releases amounts: RequestsRepository). */
  async advance(em: EntityManager, chainId: bigint, token: string, block: number, blockTime: Date | null): Promise<void> {
    await em
      .createQueryBuilder()
      .insert()
      .into(ChainCursorEntity)
      .values({ chainId, tokenAddress: token, lastBlock: BigInt(block), lastBlockTime: blockTime, updatedAt: () => 'now()' })
      .orUpdate(['last_block', 'last_block_time', 'updated_at'], ['chain_id', 'token_address'])
      .updateEntity(false)
      .execute();
  }
}
