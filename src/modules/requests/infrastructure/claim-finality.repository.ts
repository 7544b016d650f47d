import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import type { ClaimToRecheck } from '../domain/finality';
import { PaymentRequestEntity } from './payment-request.entity';

/** A verified claim awaiting its settle re-read, with what an alert about it must say. */
export interface UnsettledClaim extends ClaimToRecheck {
  requestId: string;
  partnerId: string;
  merchantId: string;
  testMode: boolean;
  chainId: bigint;
}

interface UnsettledRow {
  id: string;
  partner_id: string;
  merchant_id: string;
  test_mode: boolean;
  chain_id: string;
  token_address: string;
  recipient: string;
  amount: string;
  tx_hash: string;
  claimed_log_index: number;
  claimed_block_number: string | null;
  claimed_block_hash: string | null;
  created_at: Date;
  claim_until: Date;
}

const CLAIM_COLUMNS = `id, partner_id, merchant_id, test_mode, chain_id, token_address, recipient, amount, tx_hash,
  claimed_log_index, claimed_block_number, claimed_block_hash, created_at, claim_until`;

/** Matches the partial index payment_requests_unsettled exactly, so the selection stays an index scan. */
const UNSETTLED = `proof_status = 'verified' AND claim_settled_at IS NULL AND claim_lost_at IS NULL`;

/**
 * The finality columns of payment_requests (DESIGN §7): which verified claims still need a re-read, and
 * the outcome of one. Every write is conditional on the claim being neither settled nor lost, so two
 * workers re-reading the same claim cannot both report it.
 */
@Injectable()
export class ClaimFinalityRepository {
  constructor(@InjectRepository(PaymentRequestEntity) private readonly requests: Repository<PaymentRequestEntity>) {}

  /**
   * Claims of one mode on one chain, in any token, whose recorded block is at or below `through` (unknown
   * blocks first), oldest first; after `after` (the last claim of the page before) when given. Not by token:
   * a mode moved to another token keeps its old token's claims.
   */
  async due(chainId: bigint, testMode: boolean, through: number, limit: number, after?: UnsettledClaim): Promise<UnsettledClaim[]> {
    // Past `after` in (claimed_block_number NULLS FIRST, id) order; $5 (its block) may be null.
    const page = after
      ? `AND ((claimed_block_number IS NULL AND $5::bigint IS NULL AND id > $6)
           OR (claimed_block_number IS NOT NULL AND $5::bigint IS NULL)
           OR claimed_block_number > $5 OR (claimed_block_number = $5 AND id > $6))`
      : '';
    const rows = await this.requests.query<UnsettledRow[]>(
      `SELECT ${CLAIM_COLUMNS} FROM payment_requests
        WHERE ${UNSETTLED} AND chain_id = $1 AND test_mode = $2
          AND (claimed_block_number IS NULL OR claimed_block_number <= $3) ${page}
        ORDER BY claimed_block_number NULLS FIRST, id LIMIT $4`,
      [chainId.toString(), testMode, through, limit, ...(after ? [after.blockNumber, after.requestId] : [])],
    );
    return rows.map(toClaim);
  }

  /**
   * Every unsettled claim of one transaction in one mode, by log index: a batch payment (one contract paying
   * several requests) is several claims, and a reorg that re-includes it moves them all.
   */
  async ofTransaction(chainId: bigint, testMode: boolean, txHash: string): Promise<UnsettledClaim[]> {
    const rows = await this.requests.query<UnsettledRow[]>(
      `SELECT ${CLAIM_COLUMNS} FROM payment_requests
        WHERE ${UNSETTLED} AND chain_id = $1 AND test_mode = $2 AND tx_hash = $3
        ORDER BY claimed_log_index`,
      [chainId.toString(), testMode, txHash],
    );
    return rows.map(toClaim);
  }

  /** The claim is deep enough and still there: never re-read again. */
  async settle(id: string, blockNumber: number, blockHash: string): Promise<boolean> {
    const [rows] = await this.requests.query<[unknown[], number]>(
      `UPDATE payment_requests SET claim_settled_at = now(), claimed_block_number = $2, claimed_block_hash = $3
        WHERE id = $1 AND ${UNSETTLED} RETURNING id`,
      [id, blockNumber, blockHash],
    );
    return rows.length > 0;
  }

  /**
   * Claims found vanished (their alerts raised: lost) let go of their log indexes: their transfer is gone,
   * and a sibling the reorg moved may now sit at one. The alert keeps the index. Its own statement, before
   * the move, so a move that fails does not keep them held.
   */
  async releaseIndexes(lost: string[]): Promise<void> {
    if (lost.length === 0) return;
    await this.requests.query(`UPDATE payment_requests SET claimed_log_index = NULL WHERE id = ANY($1::uuid[]) AND claim_lost_at IS NOT NULL`, [lost]);
  }

  /**
   * The transaction was re-included in another block: its claims now point there and wait for that block's
   * depth. Their log indexes follow it, all at once: a batch payment re-included behind another transaction's
   * logs shifts every transfer, and one claim moved alone onto the index another still holds broke the unique
   * claim index (payment_requests_claim), which failed every later re-read of the mode
   * (2026-11-27). So the moving claims first let go of their indexes, then take the new ones, in one
   * transaction. The ids that moved (a claim settled or lost meanwhile does not).
   */
  async moveTogether(moves: Array<{ id: string; blockNumber: number; blockHash: string; logIndex: number }>): Promise<string[]> {
    if (moves.length === 0) return [];
    return this.requests.manager.transaction(async (em) => {
      const ids = moves.map((m) => m.id);
      await em.query(`UPDATE payment_requests SET claimed_log_index = NULL WHERE id = ANY($1::uuid[]) AND ${UNSETTLED}`, [ids]);
      // UPDATE … RETURNING answers [rows, count] through TypeORM.
      const [rows] = await em.query<[Array<{ id: string }>, number]>(
        `UPDATE payment_requests p SET claimed_block_number = m.block_number, claimed_block_hash = m.block_hash,
                claimed_log_index = m.log_index
           FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::int[]) AS m(id, block_number, block_hash, log_index)
          WHERE p.id = m.id AND ${UNSETTLED} RETURNING p.id`,
        [ids, moves.map((m) => m.blockNumber), moves.map((m) => m.blockHash), moves.map((m) => m.logIndex)],
      );
      return rows.map((r) => r.id);
    });
  }

  /** Those of `ids` whose claim is settled or lost: never re-read again. */
  async closed(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.requests.query<Array<{ id: string }>>(
      `SELECT id FROM payment_requests WHERE id = ANY($1::uuid[]) AND (claim_settled_at IS NOT NULL OR claim_lost_at IS NOT NULL)`,
      [ids],
    );
    return rows.map((r) => r.id);
  }

  /** The claim pays its request no more (its log vanished, or sits outside the pay window). In the caller's transaction, with the alert; false when already decided. */
  async markLost(em: EntityManager, id: string): Promise<boolean> {
    const [rows] = await em.query<[unknown[], number]>(
      `UPDATE payment_requests SET claim_lost_at = now() WHERE id = $1 AND ${UNSETTLED} RETURNING id`,
      [id],
    );
    return rows.length > 0;
  }
}

function toClaim(r: UnsettledRow): UnsettledClaim {
  return {
    requestId: r.id,
    partnerId: r.partner_id,
    merchantId: r.merchant_id,
    testMode: r.test_mode,
    chainId: BigInt(r.chain_id),
    tokenAddress: r.token_address,
    recipient: r.recipient,
    amount: BigInt(r.amount),
    txHash: r.tx_hash,
    logIndex: r.claimed_log_index,
    blockNumber: r.claimed_block_number === null ? null : Number(r.claimed_block_number),
    blockHash: r.claimed_block_hash,
    createdAt: r.created_at,
    claimUntil: r.claim_until,
  };
}
