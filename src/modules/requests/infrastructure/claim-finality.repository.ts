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
}

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
   * blocks first), oldest first. Not by token: a mode moved to another token keeps its old token's claims.
   */
  async due(chainId: bigint, testMode: boolean, through: number, limit: number): Promise<UnsettledClaim[]> {
    const rows = await this.requests.query<UnsettledRow[]>(
      `SELECT id, partner_id, merchant_id, test_mode, chain_id, token_address, recipient, amount, tx_hash,
              claimed_log_index, claimed_block_number, claimed_block_hash
         FROM payment_requests
        WHERE ${UNSETTLED} AND chain_id = $1 AND test_mode = $2
          AND (claimed_block_number IS NULL OR claimed_block_number <= $3)
        ORDER BY claimed_block_number NULLS FIRST, id LIMIT $4`,
      [chainId.toString(), testMode, through, limit],
    );
    return rows.map((r) => ({
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
    }));
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
   * The transaction was re-included in another block: the claim now points there and waits for that block's
   * depth. The log index follows it (the unique claim index still holds: it is the same transfer).
   */
  async move(id: string, to: { blockNumber: number; blockHash: string; logIndex: number }): Promise<boolean> {
    const [rows] = await this.requests.query<[unknown[], number]>(
      `UPDATE payment_requests SET claimed_block_number = $2, claimed_block_hash = $3, claimed_log_index = $4
        WHERE id = $1 AND ${UNSETTLED} RETURNING id`,
      [id, to.blockNumber, to.blockHash, to.logIndex],
    );
    return rows.length > 0;
  }

  /** The claimed log vanished. In the caller's transaction, with the alert; false when already decided. */
  async markLost(em: EntityManager, id: string): Promise<boolean> {
    const [rows] = await em.query<[unknown[], number]>(
      `UPDATE payment_requests SET claim_lost_at = now() WHERE id = $1 AND ${UNSETTLED} RETURNING id`,
      [id],
    );
    return rows.length > 0;
  }
}
