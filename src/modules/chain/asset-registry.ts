import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, MODES, type AppConfig, type ChainConfig, type Confirmations, type Mode } from '../../config/config';
import { AssetRepository } from './asset.repository';
import { assetId } from './asset-id';
import { NoTokenContract, type ChainReader } from './chain-reader';

export interface Asset {
  mode: Mode;
  chainId: bigint;
  token: string;
  decimals: number;
  symbol: string;
  confirmations: Confirmations;
  assetId: string;
}

/** What a person needs to read a token amount: "12.34 USDC" from 12340000 base units. */
export interface TokenInfo {
  symbol: string;
  decimals: number;
}

export type ChainHealth =
  | { state: 'ok' }
  | { state: 'not_configured' }
  | { state: 'unreachable'; detail: string }
  | { state: 'chain_id_mismatch'; detail: string }
  | { state: 'no_token_contract'; detail: string };

export const CHAIN_READERS = Symbol('CHAIN_READERS');
export type ChainReaderFactory = (mode: Mode, chain: ChainConfig) => ChainReader;

/**
 * The asset of each mode. Token decimals and symbol are read from the contract at start and kept in
 * Postgres, so a restart while the RPC is down still prices requests. An RPC on another chain than the one
 * configured switches the mode off (no requests, no verification) and health says why: at start, and at any
 * time later (a node restarted on another chain, or the URL re-pointed at one, answers at the same address),
 * seen by the periodic re-check or by a verification asking before it decides. The mode comes back on once
 * the node reports the configured chain id again.
 */
@Injectable()
export class AssetRegistry implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Chain');
  private readonly assets = new Map<Mode, Asset>();
  private readonly readers = new Map<Mode, ChainReader>();
  private readonly health = new Map<Mode, ChainHealth>();
  private retry?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CHAIN_READERS) private readonly factory: ChainReaderFactory,
    private readonly repo: AssetRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    await Promise.all(MODES.map((mode) => this.connect(mode)));
    // A mode whose RPC was down at start keeps trying in the background.
    this.retry = setInterval(() => void Promise.all(MODES.map((m) => this.refresh(m))).catch(() => undefined), 10000);
    this.retry.unref();
  }

  onApplicationShutdown(): void {
    if (this.retry) clearInterval(this.retry);
    for (const reader of this.readers.values()) (reader as { destroy?: () => void }).destroy?.();
  }

  asset(mode: Mode): Asset | null {
    return this.assets.get(mode) ?? null;
  }

  /** Symbol and decimals of a token as last read from its contract (also for an asset no mode uses now). */
  async storedAsset(chainId: bigint, token: string): Promise<TokenInfo | null> {
    const row = await this.repo.find(chainId, token);
    return row ? { symbol: row.symbol, decimals: row.decimals } : null;
  }

  /**
   * Symbol and decimals of the token a request is priced in: a configured mode's asset from memory (the usual
   * case, no query), else as last stored (an asset no mode uses now); null when it was never read.
   */
  async tokenOf(chainId: bigint, token: string): Promise<TokenInfo | null> {
    const address = token.toLowerCase();
    for (const a of this.assets.values()) {
      if (a.chainId === chainId && a.token.toLowerCase() === address) return { symbol: a.symbol, decimals: a.decimals };
    }
    return this.storedAsset(chainId, token);
  }

  /** The reader of a mode whose chain id checked out; null while verification is off for it. */
  reader(mode: Mode): ChainReader | null {
    return this.health.get(mode)?.state === 'chain_id_mismatch' ? null : (this.readers.get(mode) ?? null);
  }

  status(mode: Mode): ChainHealth {
    return this.health.get(mode) ?? { state: 'not_configured' };
  }

  /**
   * Retries a mode whose RPC was unreachable at start or on another chain, and asks a working one's node its
   * chain id again (called by health checks and every 10 s).
   */
  async refresh(mode: Mode): Promise<ChainHealth> {
    const state = this.health.get(mode)?.state;
    if (state === 'unreachable' || state === 'chain_id_mismatch' || state === 'no_token_contract') await this.connect(mode);
    // A node that stopped answering is the readers' and health's to report; only another chain id turns it off.
    else if (state === 'ok') await this.onConfiguredChain(mode).catch(() => undefined);
    return this.status(mode);
  }

  /**
   * Whether the mode's node reports the configured chain id now. The check at start is not enough: a node
   * restarted on another chain (or a URL re-pointed at one) answers at the same address, and its transactions
   * (the same token address, wallets and amounts can exist there) would be read as the configured chain's. On
   * another chain id the mode is switched off at once, as at start. Callers deciding on what they read ask after
   * reading it. Rejects when the node does not answer.
   */
  async onConfiguredChain(mode: Mode): Promise<boolean> {
    const chain = this.config.chains[mode];
    const reader = this.readers.get(mode);
    if (!chain || !reader) return false;
    const actual = await reader.chainId();
    if (actual === chain.chainId) return true;
    this.switchOff(mode, chain, actual);
    return false;
  }

  private async connect(mode: Mode): Promise<void> {
    const chain = this.config.chains[mode];
    if (!chain) {
      this.health.set(mode, { state: 'not_configured' });
      return;
    }
    const reader = this.readers.get(mode) ?? this.factory(mode, chain);
    this.readers.set(mode, reader);
    let answered = false;
    try {
      const actual = await reader.chainId();
      answered = true;
      if (actual !== chain.chainId) {
        this.switchOff(mode, chain, actual);
        return;
      }
      const info = await reader.tokenInfo(chain.tokenAddress);
      await this.repo.save(chain.chainId, chain.tokenAddress, info.symbol, info.decimals);
      this.setAsset(mode, chain, info.decimals, info.symbol);
      if (this.health.get(mode)?.state === 'chain_id_mismatch') this.logger.warn(`${mode} mode enabled again: RPC reports chain id ${actual}`);
      this.health.set(mode, { state: 'ok' });
    } catch (e) {
      const detail = (e as Error).message;
      // Last seen on another chain: a node that does not answer now says nothing of its chain, and the stored
      // asset would turn the mode back on (requests created for a node last seen on another chain). Only the
      // configured chain id turns it on again.
      if (!answered && this.health.get(mode)?.state === 'chain_id_mismatch') {
        this.logger.warn(`${mode} mode stays disabled: its RPC, last on another chain id, did not answer (${detail})`);
        return;
      }
      // The node answered: no code at the token address, or a contract that is not an ERC-20. The RPC is fine,
      // the address is not.
      const noContract = e instanceof NoTokenContract;
      const setting = `CHAIN_${mode.toUpperCase()}_TOKEN_ADDRESS ${chain.tokenAddress}`;
      const health: ChainHealth = !noContract
        ? { state: 'unreachable', detail }
        : e.why
          ? { state: 'no_token_contract', detail: `the contract at ${setting} on chain id ${chain.chainId} is not an ERC-20 token (${e.why})` }
          : { state: 'no_token_contract', detail: `no contract at ${setting} on chain id ${chain.chainId}` };
      this.health.set(mode, health);
      if (noContract) {
        // The node says no token is there: requests created now could never be paid, whatever was stored.
        this.assets.delete(mode);
        this.logger.warn(`${mode} mode: ${health.detail}; mode off until the token is there`);
        return;
      }
      const row = await this.repo.find(chain.chainId, chain.tokenAddress);
      if (row) this.setAsset(mode, chain, row.decimals, row.symbol);
      this.logger.warn(`${mode} RPC unreachable (${detail}); ${row ? 'using stored token metadata' : 'no token metadata yet'}`);
    }
  }

  /** No requests, no verification, health says why; logged once per change, however often it is seen. */
  private switchOff(mode: Mode, chain: ChainConfig, actual: bigint): void {
    const detail = `RPC reports chain id ${actual}, configured CHAIN_${mode.toUpperCase()}_CHAIN_ID is ${chain.chainId}`;
    const before = this.health.get(mode);
    this.health.set(mode, { state: 'chain_id_mismatch', detail });
    this.assets.delete(mode);
    if (before?.state !== 'chain_id_mismatch' || before.detail !== detail) this.logger.error(`${mode} mode disabled: ${detail}`);
  }

  private setAsset(mode: Mode, chain: ChainConfig, decimals: number, symbol: string): void {
    this.assets.set(mode, {
      mode,
      chainId: chain.chainId,
      token: chain.tokenAddress,
      decimals,
      symbol,
      confirmations: chain.confirmations,
      assetId: assetId(chain.chainId, chain.tokenAddress),
    });
  }
}
