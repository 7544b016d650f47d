import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { ChainTransfer } from '../../chain/chain-reader';
import { UnmatchedTransferEntity } from './unmatched-transfer.entity';

/** A transfer as the scan keeps it; `blockHash` is null on rows kept before it was. */
export type SeenTransfer = Omit<ChainTransfer, 'blockHash'> & { blockHash: string | null };

/** A transfer the scan could not decide yet, and the request it may pay. */
export interface UndecidedTransfer {
  /** Its row, and when it was due (where a lease that ends untried puts it back). */
  id: string;
  dueAt: Date;
  transfer: SeenTransfer;
  requestId: string;
  /** Tries so far. */
  retries: number;
  /** The tip at its last try when it waits for a block; null when it waits on time. */
  retryTip: number | null;
  /** Its request's claim window; null when the request is gone. */
  claimUntil: Date | null;
}

/**
 * Undecided transfers a retry round has leased: no other round takes them until the lease ends, and the
 * round's decisions are written only while a row still carries `lease` (the main scan's own decision on the
 * same transfer clears it, and then wins).
 */
export interface Leased {
  lease: string;
  due: UndecidedTransfer[];
}

/** When an undecided transfer is tried next: after `delayMs`, and when `tip` is given, not before the tip passes it. */
export interface NextTry {
  delayMs: number;
  tip: number | null;
}

interface UndecidedRow {
  id: string;
  due_at: Date;
  tx_hash: string;
  log_index: number;
  block_number: string;
  block_hash: string | null;
  token_address: string;
  from_address: string;
  to_address: string;
  value: string;
  pending_request_id: string;
  retries: number;
  retry_tip: string | null;
  claim_until: Date | null;
}

/**
 * unmatched_transfers: transfers to merchant wallets that paid nothing, for operators, and transfers the scan
 * could not decide yet (pending_request_id set), which it retries on their own schedule (retry_at, retry_tip).
 */
@Injectable()
export class UnmatchedTransfersRepository {
  constructor(@InjectRepository(UnmatchedTransferEntity) private readonly transfers: Repository<UnmatchedTransferEntity>) {}

  /**
   * Decided, and paid nothing: kept for operators with its reason. Seen again, it keeps one row. `lease`: a
   * retry round's decision, written only while its row still carries that lease (false when it did not).
   */
  async record(chainId: bigint, t: SeenTransfer, reason: string, lease: string | null): Promise<boolean> {
    return this.write(chainId, t, reason, null, { delayMs: 0, tip: null }, false, lease);
  }

  /**
   * Undecided: kept with the request it may pay, tried again at `next`. `tried`: this was a retry (the
   * back-off counts it); a first sighting, or a re-read range, leaves the count as it is. `lease`: as in record.
   */
  async hold(
    chainId: bigint, t: SeenTransfer, reason: string, requestId: string, next: NextTry, tried: boolean, lease: string | null,
  ): Promise<boolean> {
    return this.write(chainId, t, reason, requestId, next, tried, lease);
  }

  /**
   * A retry that changed nothing (the same tip, or a failure): only its schedule moves; `tip` undefined keeps
   * it. Only while the row carries the round's `lease`; false when it does not. A row carrying a lease is held
   * (pending_request_id set: lease() takes only those, and every write of pending_request_id drops the lease),
   * so the statement does not say so: `pending_request_id IS NOT NULL` would let Postgres read the row through
   * unmatched_transfers_retry, every held row of the chain, when its statistics say few are held (see oneOf).
   */
  async postpone(chainId: bigint, t: SeenTransfer, lease: string, delayMs: number, tip?: number): Promise<boolean> {
    const [, n] = await this.transfers.query<[unknown[], number]>(
      `UPDATE unmatched_transfers
          SET retries = retries + 1, retry_at = now() + $4 * interval '1 millisecond',
              retry_tip = CASE WHEN $5::bigint IS NULL THEN retry_tip ELSE $5::bigint END, retry_lease = NULL
        WHERE chain_id = $1 AND tx_hash = $2 AND log_index = $3 AND retry_lease = $6`,
      [chainId.toString(), t.txHash, t.logIndex, delayMs, tip ?? null, lease],
    );
    return n > 0;
  }

  /**
   * The leased rows a round did not get to (it stopped early) are due again as they were, in their old place;
   * rows it decided, or whose lease another writer took over, are left alone.
   */
  async release(leased: Leased): Promise<void> {
    if (leased.due.length === 0) return;
    await this.transfers.query(
      `UPDATE unmatched_transfers u SET retry_at = d.due_at, retry_lease = NULL
         FROM unnest($2::bigint[], $3::timestamptz[]) AS d(id, due_at)
        WHERE u.id = d.id AND u.retry_lease = $1`,
      [leased.lease, leased.due.map((u) => u.id), leased.due.map((u) => u.dueAt)],
    );
  }

  /**
   * Rows kept for `t`'s transaction and wallet from another block than `t`'s: the transaction was mined again
   * elsewhere (a reorg deeper than N), and its transfers to this wallet are being read again where they are
   * now. A log index means nothing across blocks, so a row of the old block would stand for a transfer that
   * has a new index, or none (re-included one log earlier, a batch's one extra transfer
   * was kept twice). The scan reads every log of a block to a watched wallet in one pass, and a pass that
   * fails does not move its cursor, so the ones still there are written again before the block is done.
   */
  async forgetOtherBlocks(chainId: bigint, t: ChainTransfer): Promise<void> {
    await this.transfers.query(
      `DELETE FROM unmatched_transfers
        WHERE chain_id = $1 AND tx_hash = $2 AND token_address = $3 AND to_address = $4
          AND (block_number <> $5 OR block_hash <> $6)`,
      [chainId.toString(), t.txHash, t.token, t.to, t.blockNumber, t.blockHash],
    );
  }

  /** A transfer that paid a request is not unmatched: the row kept while it was undecided goes. */
  async forget(chainId: bigint, t: SeenTransfer): Promise<void> {
    await this.transfers.delete({ chainId, txHash: t.txHash, logIndex: t.logIndex });
  }

  /**
   * The tokens of a chain with undecided transfers (held for a request), whatever mode's token each is now. A
   * loose index scan of unmatched_transfers_retry: one probe per token.
   */
  async pendingTokens(chainId: bigint): Promise<string[]> {
    const rows = await this.transfers.query<{ token_address: string }[]>(
      `WITH RECURSIVE t(token_address) AS (
         (SELECT token_address FROM unmatched_transfers
           WHERE chain_id = $1 AND pending_request_id IS NOT NULL ORDER BY token_address LIMIT 1)
         UNION ALL
         SELECT (SELECT u.token_address FROM unmatched_transfers u
                  WHERE u.chain_id = $1 AND u.pending_request_id IS NOT NULL AND u.token_address > t.token_address
                  ORDER BY u.token_address LIMIT 1)
           FROM t WHERE t.token_address IS NOT NULL)
       SELECT token_address FROM t WHERE token_address IS NOT NULL`,
      [chainId.toString()],
    );
    return rows.map((r) => r.token_address);
  }

  /**
   * Leases the undecided transfers of one asset due for a try, earliest retry_at first (a tried one goes to
   * the back, so none is starved): due by time and, when waiting for a block, with a tip past the one of its
   * last try, or whose request's window ended before `giveUpBefore` (or is gone), whatever the tip (its last
   * try reads the chain afresh). A try that failed backs off in time either way. One statement, committed at
   * once: each row gets the lease and is not due again for `leaseMs` (rows another round is leasing right now
   * are skipped), so the round's RPC calls run with no lock and no transaction held, and two rounds never
   * try the same row unless one outlives its lease. Returned in the order they were due.
   */
  async lease(chainId: bigint, token: string, tip: number, giveUpBefore: Date, limit: number, leaseMs: number): Promise<Leased> {
    const lease = randomUUID();
    const [rows] = await this.transfers.query<[UndecidedRow[], number]>(
      `UPDATE unmatched_transfers u SET retry_at = now() + $6 * interval '1 millisecond', retry_lease = $7
         FROM (SELECT u.id, u.retry_at, r.claim_until
                 FROM unmatched_transfers u LEFT JOIN payment_requests r ON r.id = u.pending_request_id
                WHERE u.pending_request_id IS NOT NULL AND u.chain_id = $1 AND u.token_address = $2
                  AND u.retry_at <= now()
                  AND (u.retry_tip IS NULL OR u.retry_tip < $3 OR r.claim_until IS NULL OR r.claim_until < $4)
                ORDER BY u.retry_at, u.id LIMIT $5
                  FOR UPDATE OF u SKIP LOCKED) d
        WHERE u.id = d.id
       RETURNING u.id, d.retry_at AS due_at, u.tx_hash, u.log_index, u.block_number, u.block_hash, u.token_address,
                 u.from_address, u.to_address, u.value, u.pending_request_id, u.retries, u.retry_tip, d.claim_until`,
      [chainId.toString(), token, tip, giveUpBefore, limit, leaseMs, lease],
    );
    rows.sort((a, b) => a.due_at.getTime() - b.due_at.getTime() || (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    return { lease, due: rows.map((u) => this.undecided(u)) };
  }

  private undecided(u: UndecidedRow): UndecidedTransfer {
    return {
      id: u.id,
      dueAt: u.due_at,
      requestId: u.pending_request_id,
      retries: u.retries,
      retryTip: u.retry_tip === null ? null : Number(u.retry_tip),
      claimUntil: u.claim_until,
      transfer: {
        txHash: u.tx_hash,
        logIndex: u.log_index,
        blockNumber: Number(u.block_number),
        blockHash: u.block_hash,
        token: u.token_address,
        from: u.from_address,
        to: u.to_address,
        value: BigInt(u.value),
      },
    };
  }

  /**
   * Without a lease (the main scan's own sighting): upserted, and any round's lease on the row is void, so
   * this decision stands over that round's. With one: only its row still carrying it is updated.
   */
  private async write(
    chainId: bigint, t: SeenTransfer, reason: string, requestId: string | null, next: NextTry, tried: boolean, lease: string | null,
  ): Promise<boolean> {
    if (lease === null) {
      await this.upsert(chainId, t, reason, requestId, next, tried);
      return true;
    }
    const [, n] = await this.transfers.query<[unknown[], number]>(
      `UPDATE unmatched_transfers
          SET reason = $4, pending_request_id = $5, retry_at = now() + $6 * interval '1 millisecond', retry_tip = $7,
              retries = retries + $8, retry_lease = NULL
        WHERE chain_id = $1 AND tx_hash = $2 AND log_index = $3 AND retry_lease = $9`,
      [chainId.toString(), t.txHash, t.logIndex, reason, requestId, next.delayMs, next.tip, tried ? 1 : 0, lease],
    );
    return n > 0;
  }

  private async upsert(chainId: bigint, t: SeenTransfer, reason: string, requestId: string | null, next: NextTry, tried: boolean): Promise<void> {
    await this.transfers.query(
      `INSERT INTO unmatched_transfers AS u
              (chain_id, tx_hash, log_index, block_number, block_hash, token_address, from_address, to_address, value,
               reason, pending_request_id, retry_at, retry_tip)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + $12 * interval '1 millisecond', $13)
       ON CONFLICT (chain_id, tx_hash, log_index) DO UPDATE
          SET reason = EXCLUDED.reason, pending_request_id = EXCLUDED.pending_request_id,
              block_number = EXCLUDED.block_number, block_hash = COALESCE(EXCLUDED.block_hash, u.block_hash),
              retry_at = EXCLUDED.retry_at,
              retry_tip = EXCLUDED.retry_tip, retries = u.retries + $14, retry_lease = NULL`,
      [
        chainId.toString(), t.txHash, t.logIndex, t.blockNumber, t.blockHash, t.token, t.from, t.to, t.value.toString(),
        reason, requestId, next.delayMs, next.tip, tried ? 1 : 0,
      ],
    );
  }
}
