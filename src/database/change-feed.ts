import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { CHANGE_CHANNEL, ChangeFeedRepository } from './change-feed.repository';

type Handler = (key: string) => void;

/** The topics of the feed, one per cache: what a key names on each. */
export const CHANGE_TOPICS = {
  /** An API key's hash (hex): revoked or issued. */
  apiKeys: 'api-keys',
  /** A partner id: its settings changed. */
  partners: 'partners',
  /** A merchant id: something request creation reads of it changed. */
  merchants: 'merchants',
  /** Rates were refreshed (the key is unused). */
  rates: 'rates',
} as const;

const RECONNECT_MIN_MS = 200;
const RECONNECT_MAX_MS = 5000;

/**
 * Tells every instance that something it may cache changed (a key revoked, a merchant disabled), through
 * Postgres LISTEN/NOTIFY: the system of record carries the message, so it does not depend on Redis, and a
 * NOTIFY sent in the transaction of the change reaches listeners exactly when that change commits.
 *
 * While this instance is not listening (start-up, a dropped connection), `live` is false and caches must
 * answer from Postgres instead of memory; when listening resumes, reset handlers run, since notifications
 * sent meanwhile are lost.
 */
@Injectable()
export class ChangeFeed implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ChangeFeed');
  private readonly handlers = new Map<string, Handler[]>();
  private readonly resetHandlers: Array<() => void> = [];
  private client: Client | null = null;
  private listening = false;
  private closed = false;
  private retryMs = RECONNECT_MIN_MS;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: ChangeFeedRepository,
  ) {}

  /** True while notifications reach this instance: only then may a cache answer from memory. */
  get live(): boolean {
    return this.listening;
  }

  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  subscribe(topic: string, handler: Handler): void {
    this.handlers.set(topic, [...(this.handlers.get(topic) ?? []), handler]);
  }

  /** Called whenever notifications may have been missed: drop everything cached. */
  onReset(handler: () => void): void {
    this.resetHandlers.push(handler);
  }

  /** Sends `key` on `topic` to every instance (this one included); pass the transaction's manager to send on commit. */
  async publish(topic: string, key: string, em?: EntityManager): Promise<void> {
    await this.repository.notify(JSON.stringify({ topic, key }), em);
  }

  /**
   * Runs `work` in one transaction with the notifications it announces: other instances hear each key when
   * (and only if) the transaction commits, and this instance's handlers run before this returns, so the
   * instance that made the change never answers from a stale entry (its own notification, arriving a moment
   * later, runs them again harmlessly).
   */
  async change<T>(topic: string, work: (em: EntityManager, announce: (key: string) => Promise<void>) => Promise<T>): Promise<T> {
    const keys: string[] = [];
    const result = await this.repository.transaction((em) =>
      work(em, async (key) => {
        await this.publish(topic, key, em);
        keys.push(key);
      }),
    );
    for (const key of keys) this.handle(topic, key);
    return result;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.listening = false;
    await this.client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new Client({ connectionString: this.config.databaseUrl, application_name: 'prs-change-feed' });
    client.on('notification', (n) => n.channel === CHANGE_CHANNEL && n.payload && this.deliver(n.payload));
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    this.client = client;
    try {
      await client.connect();
      await this.repository.listen(client);
    } catch (e) {
      this.lost(client, e as Error);
      return;
    }
    this.listening = true;
    this.retryMs = RECONNECT_MIN_MS;
    this.reset();
  }

  private lost(client: Client, e: Error): void {
    if (this.client !== client) return; // an older connection's late event
    this.client = null;
    const wasListening = this.listening;
    this.listening = false;
    client.end().catch(() => undefined);
    if (this.closed) return;
    if (wasListening) this.logger.error(`stopped listening for changes (${e.message}); caches read through until it resumes`);
    this.reset();
    this.retryTimer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, RECONNECT_MAX_MS);
  }

  private deliver(payload: string): void {
    let message: { topic?: unknown; key?: unknown };
    try {
      message = JSON.parse(payload) as typeof message;
    } catch {
      return;
    }
    if (typeof message.topic !== 'string' || typeof message.key !== 'string') return;
    this.handle(message.topic, message.key);
  }

  private handle(topic: string, key: string): void {
    for (const h of this.handlers.get(topic) ?? []) h(key);
  }

  private reset(): void {
    for (const h of this.resetHandlers) h();
  }
}
