import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, MODES, type AppConfig, type Mode } from '../../../config/config';
import { Db } from '../../../database/db';
import { AssetRegistry } from '../../chain/asset-registry';
import type { ChainTransfer } from '../../chain/chain-reader';
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
    private readonly db: Db,
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
    const chainId = asset.chainId.toString();
    return this.db.tx(async (tx) => {
      const [lock] = await tx.query<{ ok: boolean }>(
        `SELECT pg_try_advisory_xact_lock(hashtext('chain-scan:' || $1 || ':' || $2)) AS ok`,
        [chainId, asset.token],
      );
      if (!lock.ok) return null;
      const tip = await reader.tip();
      const safe = tip - (asset.confirmations - 1);
      const [cursor] = await tx.query<{ last_block: string }>(
        `SELECT last_block FROM chain_cursors WHERE chain_id = $1 AND token_address = $2`,
        [chainId, asset.token],
      );
      let from = cursor ? Number(cursor.last_block) + 1 : Math.max(0, safe - FIRST_SCAN_LOOKBACK_BLOCKS);
      if (cursor && Number(cursor.last_block) > tip) {
        // The chain is shorter than what was scanned: a development chain started afresh, or the RPC now
        // points at another node. Waiting for it to grow past the old height would miss every payment.
        from = Math.max(0, safe - FIRST_SCAN_LOOKBACK_BLOCKS);
        this.logger.warn(`chain ${chainId} tip ${tip} is below the scan cursor ${cursor.last_block}; rescanning from ${from}`);
      }
      const to = Math.min(safe, from + this.config.chainScanMaxBlocks - 1);
      if (from > to) return { from, to, transfers: 0 };
      const recipients = await tx.query<{ recipient: string }>(
        `SELECT DISTINCT recipient FROM payment_requests
          WHERE chain_id = $1 AND token_address = $2 AND amount_locked AND proof_status <> 'verified'`,
        [chainId, asset.token],
      );
      let seen = 0;
      for (let i = 0; i < recipients.length; i += RECIPIENTS_PER_QUERY) {
        const to_ = recipients.slice(i, i + RECIPIENTS_PER_QUERY).map((r) => r.recipient);
        const transfers = await reader.transfers({ token: asset.token, to: to_, fromBlock: from, toBlock: to });
        seen += transfers.length;
        for (const t of transfers) await this.handle(chainId, t);
      }
      const last = await reader.block(to);
      await tx.query(
        `INSERT INTO chain_cursors (chain_id, token_address, last_block, last_block_time) VALUES ($1, $2, $3, to_timestamp($4))
         ON CONFLICT (chain_id, token_address) DO UPDATE
           SET last_block = EXCLUDED.last_block, last_block_time = EXCLUDED.last_block_time, updated_at = now()`,
        [chainId, asset.token, to, last ? last.timestamp : null],
      );
      return { from, to, transfers: seen };
    });
  }

  private async handle(chainId: string, t: ChainTransfer): Promise<void> {
    const [claimed] = await this.db.query(
      `SELECT 1 FROM payment_requests WHERE chain_id = $1 AND tx_hash = $2 AND claimed_log_index = $3`,
      [chainId, t.txHash, t.logIndex],
    );
    if (claimed) return;
    // Amounts are unique among open requests of a merchant and asset, so the value names the request.
    const [candidate] = await this.db.query<{ id: string }>(
      `SELECT id FROM payment_requests
        WHERE chain_id = $1 AND token_address = $2 AND recipient = $3 AND amount = $4
          AND amount_locked AND proof_status <> 'verified'`,
      [chainId, t.token, t.to, t.value.toString()],
    );
    let reason = 'no_open_request_for_amount';
    if (candidate) {
      const outcome = await this.verification.verify(candidate.id, t.txHash, 'chain_scan');
      if (outcome.kind === 'verified' || outcome.kind === 'moot') return;
      reason = outcome.kind === 'rejected' ? outcome.reason : `unconfirmed_${outcome.why}`;
    }
    await this.db.query(
      `INSERT INTO unmatched_transfers (chain_id, tx_hash, log_index, block_number, token_address, from_address, to_address, value, reason)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT (chain_id, tx_hash, log_index) DO UPDATE SET reason = EXCLUDED.reason`,
      [chainId, t.txHash, t.logIndex, t.blockNumber, t.token, t.from, t.to, t.value.toString(), reason],
    );
    this.logger.log(`unmatched transfer ${t.txHash}#${t.logIndex} to ${t.to}: ${reason}`);
  }
}
