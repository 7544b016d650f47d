import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, MODES, type AppConfig, type Mode } from '../../../config/config';
import { AssetRegistry } from '../../chain/asset-registry';
import type { ChainTransfer } from '../../chain/chain-reader';
import { ChainCursorsRepository } from '../infrastructure/chain-cursors.repository';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { UnmatchedTransfersRepository } from '../infrastructure/unmatched-transfers.repository';
import { deepThrough } from '../domain/finality';
import { readHead } from './chain-head';
import { VerificationService } from './verification.service';

/** How far back a first scan of a chain starts. */
const FIRST_SCAN_LOOKBACK_BLOCKS = 1000;
const RECIPIENTS_PER_QUERY = 100;

/**
 * Finds payments nobody submitted a hash for: reads Transfer logs of each mode's token to wallets with
 * claimable requests, from a persisted cursor up to the tip less the confirmations, in bounded ranges, and
 * pays through the same verification path. Transfers to those wallets that pay nothing are kept for
 * operators. One scan per chain at a time, whatever the number of workers (a transaction-scoped advisory
 * lock); the cursor moves only after its range was fully handled, so a failure re-reads the range.
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
    const candidate = await this.requests.claimableByAmount(chainId, t.token, t.to, t.value);
    let reason = 'no_open_request_for_amount';
    if (candidate) {
      const outcome = await this.verification.verify(candidate, t.txHash, 'chain_scan');
      if (outcome.kind === 'verified' || outcome.kind === 'moot') return;
      reason = outcome.kind === 'rejected' ? outcome.reason : `unconfirmed_${outcome.why}`;
    }
    await this.unmatched.record(chainId, t, reason);
    this.logger.log(`unmatched transfer ${t.txHash}#${t.logIndex} to ${t.to}: ${reason}`);
  }
}
