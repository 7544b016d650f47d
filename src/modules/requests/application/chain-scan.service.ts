import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, MODES, type AppConfig, type Mode } from '../../../config/config';
import { doubling } from '../../../common/time';
import { AssetRegistry, type Asset } from '../../chain/asset-registry';
import type { ChainReader, ChainTransfer } from '../../chain/chain-reader';
import { ChainCursorsRepository } from '../infrastructure/chain-cursors.repository';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { UnmatchedTransfersRepository, type NextTry, type SeenTransfer } from '../infrastructure/unmatched-transfers.repository';
import { deepThrough } from '../domain/finality';
import { readHead } from './chain-head';
import { ChainOff, VerificationService, type VerifyOutcome } from './verification.service';

/** How far back a first scan of a chain starts. */
const FIRST_SCAN_LOOKBACK_BLOCKS = 1000;
const RECIPIENTS_PER_QUERY = 100;
/**
 * Blocks at most this far below the tip the scan read are read one by one, by hash; deeper ones by range.
 * Behind a round-robin RPC, eth_getLogs may reach a backend whose head is below the range's end, which
 * answers the logs up to its head without an error; a block hash such a backend does not have is refused
 * (EIP-234), so only a block read by hash is proven read. A scan that keeps up reads every block this way.
 */
const BY_HASH_DEPTH_BLOCKS = 128;
/** Undecided transfers tried per scan of an asset, earliest retry_at first. */
const RETRIES_PER_SCAN = 100;
/** Back-off of a transfer the node does not know, or whose retry failed: 1 s, doubling, at most 5 minutes. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 300_000;
/** Retries that fail in a row before the scan leaves the rest for later (the node is likely down). */
const FAILURES_PER_SCAN = 3;
/**
 * An undecided transfer still undecided this long after its request's claim window is given up (above the
 * verification's own hour, after which a transaction that is not mined is refused as transaction_not_found).
 */
export const GIVE_UP_AFTER_WINDOW_MS = 6 * 3600_000;
/** Waits that no new block ends: tried again after a back-off in time (see nextTry). */
const BACKS_OFF = new Set(['unknown', 'chain_off', 'chain_moved']);

/** A retry of an undecided transfer: what its row says of it, and the tip the scan read. */
interface Retry {
  retries: number;
  retryTip: number | null;
  scanTip: number;
  /**
   * A retry round's lease on the row (its decision is written only while the row still carries it); null for
   * the main scan's own sighting of the transfer.
   */
  lease: string | null;
  /**
   * Past its request's window plus GIVE_UP_AFTER_WINDOW_MS: this try reads the chain afresh (no seen tip), and
   * if the node still cannot decide, the transfer is given up. A try that fails (the RPC erred) decides
   * nothing and is put back like any other: a payment is never given up on an error.
   */
  last: boolean;
}

/**
 * Finds payments nobody submitted a hash for: reads Transfer logs of each mode's token, and of any other
 * token on the mode's chain that open requests are still priced in, to wallets with claimable requests,
 * from a persisted cursor per chain and token up to the tip less the confirmations, in bounded ranges, and
 * pays through the same verification path. Transfers to those wallets that pay nothing are kept for
 * operators. One scan per chain and token at a time, whatever the number of workers (a session advisory lock,
 * held with no transaction open: see scanToken); the cursor moves only after its range was fully handled, so a
 * failure re-reads the range.
 * A mode whose scan fails does not stop the other's.
 *
 * A transfer whose verification cannot be decided yet (it must wait: a load-balanced RPC whose backend is
 * behind the one that served the logs, a reorg under way) is kept with the request it may pay and retried
 * after the range is committed, however far the cursor has moved: a retry can neither hold the cursor back
 * nor undo it, and a failed one is logged and backs off alone. A retry round holds no lock and no transaction
 * across its RPC calls (a round of 100 took over 10 s under load, and held the scan lock and a pooled
 * connection all along): it leases its rows in one committed statement (UnmatchedTransfersRepository.lease),
 * so other instances' rounds skip them while its own scans go on, then writes each decision in one
 * conditional statement, only while the row still carries its lease; the main scan's decision on the same
 * transfer (a re-read range) voids the lease and stands. Retries take the earliest `retry_at` first and a
 * tried transfer goes to the back, so none is starved; one that waits for a block is tried again only when
 * the tip (read once per scan) has passed the one of its last try, one the node does not know (or whose try
 * failed) backs off in time. The retry goes through the
 * same verification (canonical block, confirmations, the claim's unique index), so it verifies at most once
 * and never a transfer a reorg removed. Every undecided transfer is bounded: one never mined is refused once
 * its request's window has passed (transaction_not_found), and any still undecided GIVE_UP_AFTER_WINDOW_MS
 * after that window is given up (undecided_gave_up, with a warning), which releases its request's amount.
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

  /** Scans every mode; one that fails is logged and the others still run. Throws the first failure after. */
  async scanAll(): Promise<void> {
    let failure: unknown = null;
    for (const mode of MODES) {
      try {
        await this.scan(mode);
      } catch (e) {
        this.logger.error(`chain scan of ${mode} mode failed: ${(e as Error).message}`);
        failure ??= e;
      }
    }
    if (failure !== null) throw failure;
  }

  /**
   * Scans every token of the mode's chain that a transfer may still pay in: the mode's token, and any other
   * token in which the mode has claimable requests (the mode was moved to another token while requests priced
   * in the old one were open). Each token keeps its own cursor and lock and moves its cursor only over a range
   * it has read, so a token left out of a scan (no claimable requests then) is not skipped over: when it joins
   * again (a switch back, a restart) it resumes where its own scan stopped. A token without claimable
   * requests costs nothing. One token failing does not stop the others; the first failure is thrown after.
   */
  async scan(mode: Mode): Promise<void> {
    const reader = this.assets.reader(mode);
    const asset = this.assets.asset(mode);
    if (!reader || !asset) return;
    const { chainId } = asset;
    // The mode's own requests only: another mode's are verified through that mode's reader and depth.
    const others = (await this.requests.claimableTokens(chainId, mode === 'test')).filter((t) => t !== asset.token);
    const scanned = [asset.token, ...others];
    // Undecided transfers of a token not scanned are still retried: decided, or given up, and never left held.
    // A safeguard: a held transfer keeps its request's amount held (the release waits for it), which keeps the
    // token scanned, but a row of the other mode's token, or one the release did not see, is not left behind.
    const retriedOnly = (await this.unmatched.pendingTokens(chainId)).filter((t) => !scanned.includes(t));
    let failure: unknown = null;
    for (const token of [...scanned, ...retriedOnly]) {
      try {
        const tip = scanned.includes(token) ? await this.scanToken(reader, asset, token) : await reader.tip();
        if (tip !== null) await this.retryUndecided(chainId, token, tip);
      } catch (e) {
        if (token !== asset.token) this.logger.error(`chain scan of token ${token} on chain ${chainId} failed: ${(e as Error).message}`);
        failure ??= e;
      }
    }
    if (failure !== null) throw failure;
  }

  /**
   * One range of one token's transfers, from its cursor; the tip read, or null when another worker holds its
   * scan. No transaction is open across the range's RPC calls: the scan lock is a session lock on a connection
   * of its own (ChainCursorsRepository.tryLockScan), and the cursor is read before and written after them in
   * single statements. A transaction held across them sat idle in transaction for the whole range, and a
   * server bounding that (idle_in_transaction_session_timeout, as managed Postgres often sets) or an operator
   * ending such sessions killed every scan longer than the bound: the cursor never moved, amounts were never
   * released, retries never ran. The lock's connection dying mid-scan lets another worker scan the same range
   * meanwhile, which is safe: each transfer is decided through the claim's unique index and upserts keyed by
   * the transfer, as when a range is re-read, and the cursor moves only from where this scan found it.
   */
  private async scanToken(reader: ChainReader, asset: Asset, token: string): Promise<number | null> {
    const { chainId } = asset;
    const lock = await this.cursors.tryLockScan(chainId, token);
    if (!lock) return null;
    try {
      const em = this.dataSource.manager;
      // The head under the lock: read before it, another worker's fresher cursor could look above the tip.
      const head = await readHead(reader, asset.confirmations);
      const tip = head.tip;
      const safe = deepThrough(asset.confirmations, head);
      const last = await this.cursors.lastBlock(em, chainId, token);
      let from = last !== null ? last + 1 : Math.max(0, safe - FIRST_SCAN_LOOKBACK_BLOCKS);
      if (last !== null && last > tip) {
        // The chain is shorter than what was scanned: a development chain started afresh, or the RPC now
        // points at another node. Waiting for it to grow past the old height would miss every payment.
        from = Math.max(0, safe - FIRST_SCAN_LOOKBACK_BLOCKS);
        this.logger.warn(`chain ${chainId} tip ${tip} is below the scan cursor ${last} of ${token}; rescanning from ${from}`);
      }
      const to = Math.min(safe, from + this.config.chainScanMaxBlocks - 1);
      if (from > to) return tip;
      const recipients = await this.requests.claimableRecipients(chainId, token);
      let read = to;
      try {
        if (recipients.length > 0) read = await this.readTransfers(reader, asset, token, recipients, { from, to, tip });
      } catch (e) {
        if (e instanceof OffChain) return null;
        throw e;
      }
      if (read < from) return tip;
      const block = await reader.block(read);
      // A node now on another chain (it answers at the same address) would move the cursor over that chain's
      // blocks: the configured chain's payments in the range, read nowhere, would never be found. Asked after
      // every read the move rests on (the head, the logs, the blocks), not before them: a switch between a
      // check and the log reads moved the cursor past a payment nobody submitted a hash for (a review's test).
      if (!(await this.assets.onConfiguredChain(asset.mode))) return null;
      if (!(await this.cursors.advance(em, chainId, token, last, read, block ? new Date(block.timestamp * 1000) : null))) {
        this.logger.warn(`chain ${chainId}: the scan cursor of ${token} moved from ${last} while this scan read blocks ${from}-${read} (another worker scanned too); left where it is`);
      }
      return tip;
    } finally {
      await lock.release();
    }
  }

  /**
   * Handles the transfers of [from, to] to `recipients` and returns the last block read in full: `to`, or
   * less when a block near the tip is not known yet to the backend that answered (the rest waits for the next
   * scan). Deep blocks are read by range, the last BY_HASH_DEPTH_BLOCKS below `tip` one by one by hash. Throws
   * OffChain when the node no longer reports the configured chain id (nothing more is handled).
   */
  private async readTransfers(
    reader: ChainReader,
    asset: Asset,
    token: string,
    recipients: string[],
    r: { from: number; to: number; tip: number },
  ): Promise<number> {
    const { chainId } = asset;
    const handleAll = async (blocks: { fromBlock: number; toBlock: number } | { blockHash: string }) => {
      for (let i = 0; i < recipients.length; i += RECIPIENTS_PER_QUERY) {
        const transfers = await reader.transfers({ token, to: recipients.slice(i, i + RECIPIENTS_PER_QUERY), ...blocks });
        // Another chain's transfers are not kept as this chain's (unmatched rows, held amounts): asked once per
        // batch that has any, after reading it. The verification asks again after its own reads.
        if (transfers.length > 0 && !(await this.assets.onConfiguredChain(asset.mode))) throw new OffChain();
        for (const t of transfers) await this.handle(chainId, t, r.tip);
      }
    };
    let read = Math.min(r.to, r.tip - BY_HASH_DEPTH_BLOCKS);
    if (read >= r.from) await handleAll({ fromBlock: r.from, toBlock: read });
    else read = r.from - 1;
    for (let n = read + 1; n <= r.to; n++) {
      let why: string;
      try {
        const block = await reader.block(n);
        if (block) {
          await handleAll({ blockHash: block.hash });
          read = n;
          continue;
        }
        why = 'the node does not have it yet';
      } catch (e) {
        // Nothing read yet: the scan failed, as any RPC error fails it. Otherwise what was read is kept (but not
        // when the node left the chain: what was read may be the other chain's).
        if (read < r.from || e instanceof OffChain) throw e;
        why = (e as Error).message;
      }
      this.logger.warn(`chain ${chainId}: the scan of ${token} stops below block ${n}, read by a later scan: ${why}`);
      break;
    }
    return read;
  }

  /**
   * The undecided transfers due, after the range is committed: leased first, then tried with nothing held
   * in the database. Money does not rest on the lease: the verification claims through the claim's unique
   * index and a conditional update, whoever calls it, so a transfer verifies at most once (a payer's proof
   * or the main scan deciding first wins); the lease keeps rounds from repeating each other's RPC calls and
   * a stale decision from being written over a newer one. Rows left untried (the round stopped on failures,
   * or threw) are put back where they were.
   */
  private async retryUndecided(chainId: bigint, token: string, tip: number): Promise<void> {
    const giveUpBefore = new Date(Date.now() - GIVE_UP_AFTER_WINDOW_MS);
    const leaseMs = this.config.chainRetryLeaseMs;
    const leased = await this.unmatched.lease(chainId, token, tip, giveUpBefore, RETRIES_PER_SCAN, leaseMs);
    try {
      let failures = 0;
      const leasedAt = Date.now();
      for (const u of leased.due) {
        // A slow node can make 100 tries outlast the lease; another round would then take the same rows and
        // repeat every call. Stop at half the lease: the rest is put back below, for the next round.
        if (Date.now() - leasedAt > leaseMs / 2) {
          this.logger.warn(`chain ${chainId}: the retry round of ${token} ran past half its lease; the others wait for the next scan`);
          return;
        }
        const t = u.transfer;
        const retry: Retry = { retries: u.retries, retryTip: u.retryTip, scanTip: tip, lease: leased.lease, last: u.claimUntil === null || u.claimUntil < giveUpBefore };
        try {
          const claim = await this.claimOn(chainId, t);
          if (claim === 'here') await this.unmatched.forget(chainId, t);
          else if (claim === 'elsewhere') await this.claimMoving(chainId, t, u.requestId, retry);
          else await this.decide(chainId, t, u.requestId, retry);
          failures = 0;
        } catch (e) {
          const why = (e as Error).message;
          const delay = doubling(RETRY_FIRST_MS, RETRY_MAX_MS, u.retries);
          await this.unmatched.postpone(chainId, t, leased.lease, delay);
          this.logger.warn(`retry of transfer ${t.txHash}#${t.logIndex} failed, next in ${delay} ms: ${why}`);
          if (++failures >= FAILURES_PER_SCAN) {
            this.logger.warn(`chain ${chainId}: ${failures} retries failed in a row; the others wait for the next scan`);
            return;
          }
        }
      }
    } finally {
      await this.unmatched.release(leased);
    }
  }

  private async handle(chainId: bigint, t: ChainTransfer, tip: number): Promise<void> {
    await this.unmatched.forgetOtherBlocks(chainId, t);
    const claim = await this.claimOn(chainId, t);
    if (claim === 'here') return;
    // Amounts are unique among the held amounts of a merchant and asset, so the value names the request.
    const candidate = await this.requests.claimableByAmount(chainId, t.token, t.to, t.value);
    const retry: Retry = { retries: 0, retryTip: null, scanTip: tip, lease: null, last: false };
    // Its log index is held by a claim of another block that finality has yet to move (a reorg deeper than N
    // shifted the transaction's logs): a transfer that may pay something waits for the move, else the claim's
    // stale index would refuse it (or it would be taken for the claim); one that pays nothing is kept at once.
    if (claim === 'elsewhere' && candidate !== null) return this.claimMoving(chainId, t, candidate, retry);
    await this.decide(chainId, t, candidate, retry);
  }

  /**
   * Whether `t`'s (tx, log index) is a claim's: `here` when the claim is in `t`'s block (or settled, no longer
   * followed: a sighting elsewhere is a stale view), `elsewhere` when it is in another block finality has not
   * re-read yet, null when no claim holds it.
   */
  private async claimOn(chainId: bigint, t: SeenTransfer): Promise<'here' | 'elsewhere' | null> {
    const claim = await this.requests.claimAt(chainId, t.txHash, t.logIndex);
    if (!claim) return null;
    return claim.settled || !movedFrom(claim, t) ? 'here' : 'elsewhere';
  }

  /**
   * Verifies `t` against the request it may pay. What pays nothing is kept for operators; what cannot be
   * decided yet is kept with its request, to be retried. A retry's decision (`retry.lease`) is written only if
   * nobody decided the row meanwhile; one skipped is logged, the row stays as the other decision left it.
   */
  private async decide(chainId: bigint, t: SeenTransfer, candidate: string | null, retry: Retry): Promise<void> {
    const { lease } = retry;
    const tried = lease !== null;
    let reason = 'no_open_request_for_amount';
    if (candidate) {
      const seenTip = tried && !retry.last ? (retry.retryTip ?? undefined) : undefined;
      const outcome = await this.verification.verify(candidate, t.txHash, 'chain_scan', seenTip).catch(chainOffWaits(retry.scanTip));
      switch (outcome.kind) {
        case 'verified': {
          // verify says the request is verified by this transaction, not which log: another transfer of the
          // same transaction, or (a lost race) another transaction, may be the one that paid it.
          const paid = await this.paid(candidate, t);
          if (paid === 'moving') return this.claimMoving(chainId, t, candidate, retry);
          if (paid === 'yes') return this.unmatched.forget(chainId, t);
          reason = 'request_already_verified';
          break;
        }
        case 'wait':
          // A transfer waiting for its mode's chain to come back is never given up: it may pay, and once the
          // cursor has passed it only this row can still verify it (each retry is one read, every 5 min).
          if (retry.last && outcome.why !== 'chain_off') return this.giveUp(chainId, t, candidate, outcome.why, lease);
          if (outcome.why === 'same_block') {
            return this.written(t, lease !== null && (await this.unmatched.postpone(chainId, t, lease, 0, Math.max(outcome.tip, retry.scanTip))));
          }
          if (!(await this.unmatched.hold(chainId, t, `unconfirmed_${outcome.why}`, candidate, this.nextTry(outcome.why, outcome.tip, retry), tried, lease))) {
            return this.written(t, false);
          }
          if (!tried) this.logger.log(`transfer ${t.txHash}#${t.logIndex} to ${t.to} undecided (${outcome.why}), retried by the next scans`);
          return;
        case 'rejected':
          reason = outcome.reason;
          break;
        case 'moot': {
          // Verified meanwhile, or before (a second payment of a paid request, whose amount is still held): by
          // this very transfer (the payer's hash), or by another one, and then this transfer paid nothing.
          const paid = outcome.why === 'already_verified' ? await this.paid(candidate, t) : 'no';
          if (paid === 'moving') return this.claimMoving(chainId, t, candidate, retry);
          if (paid === 'yes') return this.unmatched.forget(chainId, t);
          reason = `request_${outcome.why}`;
          break;
        }
      }
    }
    if (!(await this.unmatched.record(chainId, t, reason, lease))) return this.written(t, false);
    this.logger.log(`unmatched transfer ${t.txHash}#${t.logIndex} to ${t.to}: ${reason}`);
  }

  /** A retry's decision that was not written: the row was decided (or leased again) meanwhile; that stands. */
  private written(t: SeenTransfer, done: boolean): void {
    if (!done) this.logger.log(`retry of transfer ${t.txHash}#${t.logIndex}: its row changed meanwhile; left as it is`);
  }

  /** Still undecided past its bound: kept for operators as undecided_gave_up, which releases the request's amount. */
  private async giveUp(chainId: bigint, t: SeenTransfer, requestId: string, why: string, lease: string | null): Promise<void> {
    if (!(await this.unmatched.record(chainId, t, 'undecided_gave_up', lease))) return this.written(t, false);
    this.logger.warn(
      `transfer ${t.txHash}#${t.logIndex} to ${t.to} still undecided (${why}) ${GIVE_UP_AFTER_WINDOW_MS / 3600_000} h after the ` +
        `window of request ${requestId}: given up (unmatched, undecided_gave_up); the request's amount is no longer held for it`,
    );
  }

  /**
   * A transfer the node does not know backs off in time; one that waits for a block is tried again once the
   * tip passes both the scan's and the verification's (a lagging backend's tip is lower than the scan's).
   */
  private nextTry(why: string, verifiedTip: number, retry: Retry): NextTry {
    if (BACKS_OFF.has(why)) return { delayMs: doubling(RETRY_FIRST_MS, RETRY_MAX_MS, retry.retries), tip: null };
    return { delayMs: 0, tip: Math.max(verifiedTip, retry.scanTip) };
  }

  /**
   * Whether `t` is the transfer that paid `requestId`: `yes` for its claimed log in the claim's block, `no`
   * for any other transfer, `moving` for a log of the claim's transaction seen in another block than the
   * claim's (the transaction mined again elsewhere after a reorg). Which of that transaction's transfers the
   * claim is now is the finality job's to say, as it moves the claim (same log index first, else the first
   * that pays); a log index means nothing across blocks, and a transaction paying the request twice has two
   * candidates (both were taken for the claim, and the row kept for the second was deleted).
   * A claim the finality job found lost is re-read no more: its transaction seen again is kept as unmatched,
   * beside the alert, not taken for the claim. Nor is a settled one (see below).
   */
  private async paid(requestId: string, t: SeenTransfer): Promise<'yes' | 'no' | 'moving'> {
    const claim = await this.requests.claimOf(requestId);
    if (!claim || claim.txHash !== t.txHash || claim.lost) return 'no';
    // A settled claim is not re-read any more (twice N deep): a sighting elsewhere is a stale or forked view
    // of its transaction (a lagging backend, a second reorg finality went past), and pays nothing new.
    if (movedFrom(claim, t)) return claim.settled ? 'yes' : 'moving';
    return claim.logIndex === t.logIndex ? 'yes' : 'no';
  }

  /**
   * A transfer of a claim's transaction seen in another block than the claim's: kept undecided for the
   * request (its amount stays held) and tried again with the next blocks, once the finality job has moved the
   * claim (or found it lost); then it is the claim, and goes, or it is not, and is kept as unmatched.
   */
  private async claimMoving(chainId: bigint, t: SeenTransfer, requestId: string, retry: Retry): Promise<void> {
    if (retry.last) return this.giveUp(chainId, t, requestId, 'claim_moving', retry.lease);
    const tried = retry.lease !== null;
    if (!(await this.unmatched.hold(chainId, t, 'unconfirmed_claim_moving', requestId, { delayMs: 0, tip: retry.scanTip }, tried, retry.lease))) {
      return this.written(t, false);
    }
    if (!tried) this.logger.log(`transfer ${t.txHash}#${t.logIndex} to ${t.to}: its transaction paid ${requestId} in another block; decided once the claim is re-read`);
  }
}

/** The node no longer reports the mode's chain id (the registry switched the mode off): the scan stops, its cursor unmoved. */
class OffChain extends Error {}

/** Whether `t` was seen in another block than the claim's (by hash; by number for rows kept without one). */
function movedFrom(claim: { blockHash: string | null; blockNumber: number | null }, t: SeenTransfer): boolean {
  return claim.blockHash !== null && t.blockHash !== null
    ? claim.blockHash !== t.blockHash
    : claim.blockNumber !== null && claim.blockNumber !== t.blockNumber;
}

/**
 * A transfer whose candidate is a request of the other mode (both modes on one chain and token, as in
 * development) that cannot be verified now: undecided, retried with the back-off of a transaction the node
 * does not know, instead of failing the whole range and stopping the scan there for every request. `chain_off`
 * (that mode has no working chain) waits until it has one; `chain_moved` (that mode now reads another chain)
 * is given up like any undecided transfer, 6 h after its request's window.
 */
function chainOffWaits(tip: number): (e: unknown) => VerifyOutcome | { kind: 'wait'; why: 'chain_off' | 'chain_moved'; tip: number } {
  return (e) => {
    if (e instanceof ChainOff) return { kind: 'wait', why: e.off ? 'chain_off' : 'chain_moved', tip };
    throw e;
  };
}
