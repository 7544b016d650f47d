import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, MODES, type AppConfig, type Mode } from '../../../config/config';
import { AssetRegistry } from '../../chain/asset-registry';
import type { ChainTransfer } from '../../chain/chain-reader';
import { ChainCursorsRepository } from '../infrastructure/chain-cursors.repository';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { UnmatchedTransfersRepository, type SeenTransfer } from '../infrastructure/unmatched-transfers.repository';
import { deepThrough } from '../domain/finality';
import { readHead } from './chain-head';
import { VerificationService } from './verification.service';

/** How far back a first scan of a chain starts. */
const FIRST_SCAN_LOOKBACK_BLOCKS = 1000;
const RECIPIENTS_PER_QUERY = 100;
/** Undecided transfers retried per scan of an asset, oldest first. */
const RETRIES_PER_SCAN = 100;

/**
 * Finds payments nobody submitted a hash for: reads Transfer logs of each mode's token to wallets with
 * claimable requests, from a persisted cursor up to the tip less the confirmations, in bounded ranges, and
 * pays through the same verification path. Transfers to those wallets that pay nothing are kept for
 * operators. One scan per chain at a time, whatever the number of workers (a transaction-scoped advisory
 * lock); the cursor moves only after its range was fully handled, so a failure re-reads the range.
 *
 * A transfer whose verification cannot be decided yet (it must wait: a load-balanced RPC whose backend is
 * behind the one that served the logs, a reorg under way) is kept with the request it may pay and retried by
 * every scan until it pays or is refused, however far the cursor has moved: the cursor is not held back, so
 * one such transfer cannot stall the scan of every other payment. The retry goes through the same
 * verification (canonical block, confirmations, the claim's unique index), so it verifies at most once and
 * never a transfer a reorg removed; a removed one that is never mined again is refused once its request's
 * window has passed (transaction_not_found).
 */
@Injectable()
export class ChainScanService {
  private readonly logger = new Logger('ChainScan');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly requests: RequestsRepository,
    private readonly cursors: ChainCursorsRepository,
    private readonly unmatched: UnmatchedTransfersRepository,
    private readonly assets: AssetRegistry,
    private readonly verification: VerificationService,
  ) {}

  async scanAll(): Promise<void> {
    for (const mode of MODES) await this.scan(mode);
  }

  async scan(mode: Mode): Promise<{ from: number; to: number; transfers: number } | null> {
    const reader = this.assets.reader(mode);
    const asset = this.assets.asset(mode);
    if (!reader || !asset) return null;
    const { chainId, token } = asset;
    return this.dataSource.transaction(async (em) => {
      if (!(await this.cursors.tryLockScan(em, chainId, token))) return null;
      const head = await readHead(reader, asset.confirmations);
      const tip = head.tip;
      for (const u of await this.unmatched.undecided(chainId, token, RETRIES_PER_SCAN)) {
        if (await this.requests.transferClaimed(chainId, u.transfer.txHash, u.transfer.logIndex)) await this.unmatched.forget(chainId, u.transfer);
        else await this.decide(chainId, u.transfer, u.requestId);
      }
      const safe = deepThrough(asset.confirmations, head);
      const last = await this.cursors.lastBlock(em, chainId, token);
      let from = last !== null ? last + 1 : Math.max(0, safe - FIRST_SCAN_LOOKBACK_BLOCKS);
      if (last !== null && last > tip) {
        // The chain is shorter than what was scanned: a development chain started afresh, or the RPC now
        // points at another node. Waiting for it to grow past the old height would miss every payment.
        from = Math.max(0, safe - FIRST_SCAN_LOOKBACK_BLOCKS);
        this.logger.warn(`chain ${chainId} tip ${tip} is below the scan cursor ${last}; rescanning from ${from}`);
      }
      const to = Math.min(safe, from + this.config.chainScanMaxBlocks - 1);
      if (from > to) return { from, to, transfers: 0 };
      const recipients = await this.requests.claimableRecipients(chainId, token);
      let seen = 0;
      for (let i = 0; i < recipients.length; i += RECIPIENTS_PER_QUERY) {
        const batch = recipients.slice(i, i + RECIPIENTS_PER_QUERY);
        const transfers = await reader.transfers({ token, to: batch, fromBlock: from, toBlock: to });
        seen += transfers.length;
        for (const t of transfers) await this.handle(chainId, t);
      }
      const block = await reader.block(to);
      await this.cursors.advance(em, chainId, token, to, block ? new Date(block.timestamp * 1000) : null);
      return { from, to, transfers: seen };
    });
  }

  private async handle(chainId: bigint, t: ChainTransfer): Promise<void> {
    if (await this.requests.transferClaimed(chainId, t.txHash, t.logIndex)) return;
    // Amounts are unique among open requests of a merchant and asset, so the value names the request.
    await this.decide(chainId, t, await this.requests.claimableByAmount(chainId, t.token, t.to, t.value));
  }

  /**
   * Verifies `t` against the request it may pay. What pays nothing is kept for operators; what cannot be
   * decided yet is kept with its request, to be retried.
   */
  private async decide(chainId: bigint, t: SeenTransfer, candidate: string | null): Promise<void> {
    let reason = 'no_open_request_for_amount';
    if (candidate) {
      const outcome = await this.verification.verify(candidate, t.txHash, 'chain_scan');
      switch (outcome.kind) {
        case 'verified':
          return this.unmatched.forget(chainId, t);
        case 'wait':
          await this.unmatched.record(chainId, t, `unconfirmed_${outcome.why}`, candidate);
          this.logger.log(`transfer ${t.txHash}#${t.logIndex} to ${t.to} undecided (${outcome.why}), retried by the next scan`);
          return;
        case 'rejected':
          reason = outcome.reason;
          break;
        case 'moot': {
          // Verified meanwhile: by this very transaction (the payer's hash, or the transaction mined again
          // elsewhere after a reorg), or by another one, and then this transfer paid nothing.
          const r = await this.requests.findById(candidate);
          if (r?.proofStatus === 'verified' && r.txHash === t.txHash) return this.unmatched.forget(chainId, t);
          reason = `request_${outcome.why}`;
          break;
        }
      }
    }
    await this.unmatched.record(chainId, t, reason);
    this.logger.log(`unmatched transfer ${t.txHash}#${t.logIndex} to ${t.to}: ${reason}`);
  }
}
