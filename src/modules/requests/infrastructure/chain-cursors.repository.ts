import { Injectable, Logger } from '@nestjs/common';
import type { Pool, PoolClient } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { ChainCursorEntity } from './chain-cursor.entity';

/** A chain and token's scan lock, held by this process until `release()` (which never throws). */
export interface ScanLock {
  release(): Promise<void>;
}

const SCAN_LOCK_KEY = `hashtext('chain-scan:' || $1 || ':' || $2)`;

/** chain_cursors: how far the chain scan has read each asset's transfers. */
@Injectable()
export class ChainCursorsRepository {
  private readonly logger = new Logger('ChainScan');

  constructor(private readonly dataSource: DataSource) {}

  /**
   * One scan per chain and token at a time, whatever the number of workers: a session-level advisory lock on
   * a connection of its own, held across the scan's chain reads with no transaction open (a transaction open
   * across them sat idle in transaction for the whole range, and a server's
   * idle_in_transaction_session_timeout, or an operator ending such sessions, killed every long scan: its
   * cursor never moved). Null when another scan holds it. The same key as a transaction-level lock would take:
   * the two conflict, so a probe with pg_try_advisory_xact_lock sees it held.
   *
   * The lock excludes, it does not guard: its connection may die during the scan (killed, the network), which
   * frees it for another worker while this scan goes on. Every write of a scan is safe when two run at once
   * (see ChainScanService), and the cursor moves only from the value this scan read (advance).
   *
   * A session lock outlives whatever returns its connection to the pool: a pooled connection still holding it
   * would keep every scan of the token out until the process ends. So release() gives the connection back only
   * once pg_advisory_unlock said it released the lock; anything else (an error, false, a connection that
   * erred meanwhile) closes the connection instead, which ends its session and every lock it held. The pool's
   * own connection, not a QueryRunner: pg's release(err) is how a connection is closed rather than pooled.
   */
  async tryLockScan(chainId: bigint, token: string): Promise<ScanLock | null> {
    const pool = (this.dataSource.driver as PostgresDriver).master as Pool;
    const client: PoolClient = await pool.connect();
    // A connection taken from the pool has no listener for its errors: one killed while it waits here between
    // statements (pg_terminate_backend) would emit an unhandled 'error' and end the process.
    let broken: Error | null = null;
    const onError = (e: Error) => {
      if (broken) return; // pg emits the loss twice: the server's FATAL, then "Connection terminated"
      broken = e;
      this.logger.warn(`chain scan of ${token} on chain ${chainId}: its lock's connection was lost (${e.message}); another worker may scan meanwhile`);
    };
    client.on('error', onError);
    let released = false;
    const release = (err?: Error) => {
      if (released) return;
      released = true;
      client.removeListener('error', onError);
      client.release(err ?? broken ?? undefined);
    };
    let ok: boolean;
    try {
      const { rows } = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${SCAN_LOCK_KEY}) AS ok`, [chainId.toString(), token]);
      ok = rows[0]?.ok === true;
    } catch (e) {
      // Whether the lock was taken is unknown: the connection is closed, not pooled.
      release(e instanceof Error ? e : new Error(String(e)));
      throw e;
    }
    if (!ok) {
      release();
      return null;
    }
    return {
      release: async () => {
        if (released) return;
        if (broken) return release();
        let unlocked = false;
        try {
          const { rows } = await client.query<{ ok: boolean }>(`SELECT pg_advisory_unlock(${SCAN_LOCK_KEY}) AS ok`, [chainId.toString(), token]);
          unlocked = rows[0]?.ok === true;
        } catch {
          // Closed below.
        }
        release(unlocked ? undefined : new Error('the chain scan lock was not released; its connection is closed'));
      },
    };
  }

  async lastBlock(em: EntityManager, chainId: bigint, token: string): Promise<number | null> {
    const cursor = await em.getRepository(ChainCursorEntity).findOneBy({ chainId, tokenAddress: token });
    return cursor ? Number(cursor.lastBlock) : null;
  }

  /**
   * The block handled last and its time (the time is what releases amounts: RequestsRepository), written only
   * while the cursor is still at `seen`, the block it was at when the scan read it (null: there was no cursor
   * yet). One statement, committed at once. A scan whose lock was lost (its connection died) may run beside
   * another of the same range: the first to end moves the cursor, and the other, finding it moved, leaves it,
   * so a stale scan never moves it back over blocks already read, nor on past blocks it did not read. False
   * when the cursor had moved.
   */
  async advance(em: EntityManager, chainId: bigint, token: string, seen: number | null, block: number, blockTime: Date | null): Promise<boolean> {
    const rows = await em.query<unknown[]>(
      `INSERT INTO chain_cursors AS c (chain_id, token_address, last_block, last_block_time, updated_at)
       VALUES ($1, $2, $3, $4, now())
       ON CONFLICT (chain_id, token_address) DO UPDATE
          SET last_block = EXCLUDED.last_block, last_block_time = EXCLUDED.last_block_time, updated_at = now()
        WHERE c.last_block = $5::bigint
       RETURNING 1`,
      [chainId.toString(), token, block, blockTime, seen],
    );
    return rows.length > 0;
  }
}
