import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, MODES, type AppConfig, type ChainConfig, type Confirmations, type Mode } from '../../config/config';
import { AssetRepository } from './asset.repository';
import { assetId } from './asset-id';
import type { ChainReader } from './chain-reader';

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
  | { state: 'chain_id_mismatch'; detail: string };

export const CHAIN_READERS = Symbol('CHAIN_READERS');
export type ChainReaderFactory = (mode: Mode, chain: ChainConfig) => ChainReader;

/**
 * The asset of each mode. Token decimals and symbol are read from the contract at start and kept in
 * Postgres, so a restart while the RPC is down still prices requests. An RPC on another chain than the one
 * configured switches the mode off (no requests, no verification) and health says why.
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

  /** Retries a mode whose RPC was unreachable at start (called by health checks and the worker). */
  async refresh(mode: Mode): Promise<ChainHealth> {
    if (this.health.get(mode)?.state === 'unreachable') await this.connect(mode);
    return this.status(mode);
  }

  private async connect(mode: Mode): Promise<void> {
    const chain = this.config.chains[mode];
    if (!chain) {
      this.health.set(mode, { state: 'not_configured' });
      return;
    }
    const reader = this.readers.get(mode) ?? this.factory(mode, chain);
    this.readers.set(mode, reader);
    try {
      const actual = await reader.chainId();
      if (actual !== chain.chainId) {
        const detail = `RPC reports chain id ${actual}, configured CHAIN_${mode.toUpperCase()}_CHAIN_ID is ${chain.chainId}`;
        this.health.set(mode, { state: 'chain_id_mismatch', detail });
        this.assets.delete(mode);
        this.logger.error(`${mode} mode disabled: ${detail}`);
        return;
      }
      const info = await reader.tokenInfo(chain.tokenAddress);
      await this.repo.save(chain.chainId, chain.tokenAddress, info.symbol, info.decimals);
      this.setAsset(mode, chain, info.decimals, info.symbol);
      this.health.set(mode, { state: 'ok' });
    } catch (e) {
      const detail = (e as Error).message;
      this.health.set(mode, { state: 'unreachable', detail });
      const row = await this.repo.find(chain.chainId, chain.tokenAddress);
      if (row) this.setAsset(mode, chain, row.decimals, row.symbol);
      this.logger.warn(`${mode} RPC unreachable at start (${detail}); ${row ? 'using stored token metadata' : 'no token metadata yet'}`);
    }
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
