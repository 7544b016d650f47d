import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Mode } from '../../../config/config';
import { isUniqueViolation } from '../../../database/pg-errors';
import { AssetRegistry } from '../../chain/asset-registry';
import type { ChainTransfer } from '../../chain/chain-reader';
import { EventOutbox } from '../../webhooks/event-outbox';
import type { PaymentRequest } from '../domain/payment-request';
import { isDeepEnough } from '../domain/finality';
import { judgeTransaction, type NoPayReason } from '../domain/pay-rule';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { AfterCommit } from './after-commit';
import { readHead } from './chain-head';

export type ProofSource = 'payer' | 'chain_scan';

export type RejectReason = NoPayReason | 'transfer_already_claimed' | 'transaction_not_found';

export type VerifyOutcome =
  | { kind: 'verified'; requestId: string }
  | { kind: 'wait'; why: 'not_mined' | 'confirmations' | 'reorg' }
  | { kind: 'rejected'; reason: RejectReason }
  | { kind: 'moot'; why: 'missing' | 'already_verified' | 'superseded' };

/**
 * Verifies one transaction against one request: waits for the confirmations, re-reads the receipt and its
 * block from the canonical chain, applies the pay rule, and claims the (chain, tx, log) through the unique
 * index, writing proof_verified to the outbox in the same transaction. Payer-submitted hashes and the
 * chain scan come through here alike. RPC failures throw (the job backs off) and change nothing.
 */
@Injectable()
export class VerificationService {
  private readonly logger = new Logger('Verification');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: RequestsRepository,
    private readonly assets: AssetRegistry,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
  ) {}

  async verify(requestId: string, txHash: string, source: ProofSource): Promise<VerifyOutcome> {
    const r = await this.repo.findById(requestId);
    if (!r) return { kind: 'moot', why: 'missing' };
    if (r.proofStatus === 'verified') return { kind: 'moot', why: 'already_verified' };
    if (source === 'payer' && r.txHash !== txHash) return { kind: 'moot', why: 'superseded' };
    const mode: Mode = r.testMode ? 'test' : 'live';
    const reader = this.assets.reader(mode);
    const asset = this.assets.asset(mode);
    if (!reader || !asset) throw new Error(`verification is off for ${mode} mode: ${JSON.stringify(this.assets.status(mode))}`);
    if (asset.chainId !== r.chainId) throw new Error(`request ${r.id} is on chain ${r.chainId}, ${mode} mode reads ${asset.chainId}`);

    const receipt = await reader.receipt(txHash);
    if (!receipt) {
      // Not mined, dropped, or reorged away. Keep looking while a transfer could still pay the request.
      if (Date.now() > r.claimUntil.getTime() + 3600_000) return this.reject(r, source, 'transaction_not_found');
      return { kind: 'wait', why: 'not_mined' };
    }
    // N confirmations, or for `finalized` the node's finalized block (DESIGN §7).
    const head = await readHead(reader, asset.confirmations);
    if (!isDeepEnough(receipt.blockNumber, asset.confirmations, head)) return { kind: 'wait', why: 'confirmations' };
    // The receipt must sit in the block that is canonical at this height now; a reorged receipt can keep
    // "gaining" confirmations on a node that still serves it from the old branch.
    const block = await reader.block(receipt.blockNumber);
    if (!block || block.hash !== receipt.blockHash) return { kind: 'wait', why: 'reorg' };

    const verdict = judgeTransaction(r, { chainId: asset.chainId, receipt, blockTime: block.timestamp });
    if (!verdict.pays) return this.reject(r, source, verdict.reason);
    for (const transfer of verdict.transfers) {
      if (await this.claim(r, transfer, source)) return { kind: 'verified', requestId: r.id };
    }
    return this.reject(r, source, 'transfer_already_claimed');
  }

  /**
   * Marks the request verified by this transfer, unless another request holds the transfer already. The
   * amount stays held until the claim window closes: a payer who pays twice must not pay the next request
   * of the same price (the second transfer is kept as unmatched instead).
   */
  private async claim(r: PaymentRequest, t: ChainTransfer, source: ProofSource): Promise<boolean> {
    try {
      const eventIds = await this.dataSource.transaction(async (em) => {
        if (!(await this.repo.claim(em, r.id, t, source))) return null;
        const e = await this.outbox.record(em, { partnerId: r.partnerId, requestId: r.id, event: 'payment.proof_verified', testMode: r.testMode });
        return [e.id];
      });
      if (eventIds === null) return true; // verified meanwhile by a racing claim of the same transfer
      await this.afterCommit.eventsRecorded(eventIds);
      this.logger.log(`request ${r.id} verified by ${t.txHash}#${t.logIndex} (${source})`);
      return true;
    } catch (e) {
      if (isUniqueViolation(e, 'payment_requests_claim')) return false;
      throw e;
    }
  }

  private async reject(r: PaymentRequest, source: ProofSource, reason: RejectReason): Promise<VerifyOutcome> {
    // The reason is kept on the request for operators when it concerns the hash the payer submitted.
    if (source === 'payer') await this.repo.noteRejection(r.id, reason);
    return { kind: 'rejected', reason };
  }
}
