import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { CHANGE_CHANNEL, ChangeFeedRepository, replyChannel } from './change-feed.repository';
import { SERVER_KEEPALIVE } from './data-source';

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
/** How often an instance sends itself a heartbeat through the feed. */
const PING_MS = 500;
/**
 * Not live once the newest heartbeat this instance has heard back was sent longer ago than this. Measured on
 * the monotonic clock (performance.now()): a wall clock stepped back would keep a stalled instance live.
 */
const STALE_MS = 2000;
/**
 * How long a change waits for the other instances to confirm it. Longer than STALE_MS (a second to spare for
 * timers): an instance that has not confirmed by then cannot have heard a heartbeat sent after the commit, so
 * it is not live and reads through.
 */
const CONFIRM_MS = STALE_MS + 1000;
/**
 * A listening connection that has carried no heartbeat back for this long is dropped and opened again: a
 * half-open TCP link never errors, and would leave the instance reading through (and queueing heartbeats)
 * for good.
 */
const SILENT_MS = 4 * STALE_MS;
/** Listeners name their connection `prs-change-feed:<instance>` once they are listening. */
const APP_NAME = 'prs-change-feed';

/**
 * What travels: on CHANGE_CHANNEL a change (with an id to confirm); on an instance's replyChannel a confirmation
 * or its heartbeat. `direct` marks a change whose maker listens on its replyChannel; an instance of a version
 * before replyChannel omitted it, and is confirmed on CHANGE_CHANNEL as it expects (a rolling deploy).
 */
type Message =
  | { topic: string; key: string; id?: string; from?: string; direct?: true }
  | { ack: string; from: string }
  | { ping: string; at: number };

/**
 * Tells every instance that something it may cache changed (a key revoked, a merchant disabled), through
 * Postgres LISTEN/NOTIFY: the system of record carries the message, so it does not depend on Redis, and a
 * NOTIFY sent in the transaction of the change reaches listeners exactly when that change commits.
 *
 * While this instance is not listening (start-up, a dropped connection), `live` is false and caches must
 * answer from Postgres instead of memory; when listening resumes, reset handlers run, since notifications
 * sent meanwhile are lost.
 *
 * "At once" across instances: a change returns only after every other listening instance has confirmed it
 * handled the change (or after CONFIRM_MS). Each instance also hears its own heartbeat every PING_MS and stops
 * answering from memory when the newest one it heard is older than STALE_MS, so an instance too slow to confirm
 * is one that reads through to Postgres, never one that answers from a stale entry.
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
  private pingTimer: NodeJS.Timeout | null = null;
  /** When the newest heartbeat heard back was sent (performance.now()); -Infinity before the first. */
  private heardPingAt = -Infinity;
  private readonly pingWaiters: Array<{ at: number; done: () => void }> = [];
  /** Change id → the instances that confirmed it so far, and what to call on each confirmation. */
  private readonly confirmations = new Map<string, { from: Set<string>; heard: () => void }>();
  private changeSeq = 0;
  /** This process's name on the feed. */
  readonly instance = randomBytes(6).toString('hex');
  private readonly ownChannel = replyChannel(this.instance);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: ChangeFeedRepository,
  ) {}

  /** True while notifications reach this instance: only then may a cache answer from memory. */
  get live(): boolean {
    return this.listening && performance.now() - this.heardPingAt < STALE_MS;
  }

  /** The application_name of this instance's listening connection. */
  get connectionName(): string {
    return `${APP_NAME}:${this.instance}`;
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
   * later, runs them again harmlessly). It returns once every other listening instance has confirmed the
   * change (at most CONFIRM_MS), so a caller told "done" is not answered from a stale entry anywhere.
   */
  async change<T>(topic: string, work: (em: EntityManager, announce: (key: string) => Promise<void>) => Promise<T>): Promise<T> {
    const keys: string[] = [];
    const id = `${this.instance}.${++this.changeSeq}`;
    // Collected from before the commit: an instance may confirm before the query naming the listeners answers.
    const confirmations = { from: new Set<string>(), heard: () => undefined };
    this.confirmations.set(id, confirmations);
    try {
      const result = await this.repository.transaction((em) =>
        work(em, async (key) => {
          await this.repository.notify(JSON.stringify({ topic, key, id, from: this.instance, direct: true } satisfies Message), em);
          keys.push(key);
        }),
      );
      for (const key of keys) this.handle(topic, key);
      if (keys.length > 0) await this.confirmed(confirmations);
      return result;
    } finally {
      this.confirmations.delete(id);
    }
  }

  /** Waits until every other listener has confirmed the change, or CONFIRM_MS. */
  private async confirmed(confirmations: { from: Set<string>; heard: () => void }): Promise<void> {
    let names: string[];
    try {
      // After the commit: an instance named only later also listened only later, or heard the change first.
      names = await this.repository.listeners(`${APP_NAME}:`);
    } catch (e) {
      // Not knowing who listens, wait until any instance that missed the change can no longer be live.
      this.logger.warn(`could not list the instances to confirm a change (${(e as Error).message}); waiting ${CONFIRM_MS} ms`);
      await sleep(CONFIRM_MS);
      return;
    }
    const pending = names.map((n) => n.slice(APP_NAME.length + 1)).filter((i) => i !== this.instance);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, CONFIRM_MS);
      confirmations.heard = () => {
        if (pending.every((i) => confirmations.from.has(i))) {
          clearTimeout(timer);
          resolve();
        }
      };
      confirmations.heard();
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.listening = false;
    await this.client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    // The server's keepalives (dataSourceOptions): a vanished instance's listening backend ends within a minute
    // instead of staying listed, which would make every confirmed change wait CONFIRM_MS for it.
    const client = new Client({ connectionString: this.config.databaseUrl, application_name: APP_NAME, options: SERVER_KEEPALIVE });
    client.on('notification', (n) => (n.channel === CHANGE_CHANNEL || n.channel === this.ownChannel) && n.payload && this.deliver(n.payload));
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    this.client = client;
    // A link that goes silent before the first heartbeat is dropped too (the silence check starts only after it),
    // so neither start-up nor a reconnect can hang on it.
    const deadline = setTimeout(() => this.lost(client, new Error(`not listening ${SILENT_MS} ms after connecting`)), SILENT_MS);
    try {
      await client.connect();
      await this.repository.listen(client, this.connectionName, [CHANGE_CHANNEL, this.ownChannel]);
      this.listening = true;
      this.reset();
      // Live once the first heartbeat comes back.
      await this.ping(client);
    } catch (e) {
      this.lost(client, e as Error);
      return;
    } finally {
      clearTimeout(deadline);
    }
    if (this.client !== client || this.closed) return; // lost or shut down while waiting for the first heartbeat
    this.retryMs = RECONNECT_MIN_MS;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      if (performance.now() - this.heardPingAt > SILENT_MS) this.lost(client, new Error(`no heartbeat heard back for ${SILENT_MS} ms`));
      else void this.ping(client).catch(() => undefined);
    }, PING_MS);
    this.pingTimer.unref();
  }

  /** Sends a heartbeat on the listening connection; resolves when it is heard back (or the connection is lost). */
  private async ping(client: Client): Promise<void> {
    if (this.client !== client) return;
    const at = performance.now();
    const heard = new Promise<void>((done) => this.pingWaiters.push({ at, done }));
    // Resolved by lost() as well: a send stuck on a half-open link does not hold the caller.
    const sent = this.repository.notifyOn(client, this.ownChannel, JSON.stringify({ ping: this.instance, at } satisfies Message));
    await Promise.race([sent.then(() => heard), heard]);
  }

  private heardPing(at: number): void {
    this.heardPingAt = Math.max(this.heardPingAt, at);
    for (let i = this.pingWaiters.length - 1; i >= 0; i--) {
      if (this.pingWaiters[i].at <= at) this.pingWaiters.splice(i, 1)[0].done();
    }
  }

  private lost(client: Client, e: Error): void {
    if (this.client !== client) return; // an older connection's late event
    this.client = null;
    const wasListening = this.listening;
    this.listening = false;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    this.heardPingAt = -Infinity;
    for (const w of this.pingWaiters.splice(0)) w.done();
    client.end().catch(() => undefined);
    if (this.closed) return;
    if (wasListening) this.logger.error(`stopped listening for changes (${e.message}); caches read through until it resumes`);
    this.reset();
    this.retryTimer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, RECONNECT_MAX_MS);
  }

  private deliver(payload: string): void {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(payload) as Record<string, unknown>;
    } catch {
      return;
    }
    if (typeof m !== 'object' || m === null) return;
    if (typeof m.ping === 'string' && typeof m.at === 'number') {
      if (m.ping === this.instance) this.heardPing(m.at);
    } else if (typeof m.ack === 'string' && typeof m.from === 'string') {
      const confirmations = this.confirmations.get(m.ack);
      confirmations?.from.add(m.from);
      confirmations?.heard();
    } else if (typeof m.topic === 'string' && typeof m.key === 'string') {
      this.handle(m.topic, m.key);
      if (typeof m.id === 'string' && typeof m.from === 'string' && m.from !== this.instance) this.confirm(m.id, m.direct === true ? m.from : null);
    }
  }

  /** Tells the instance that made change `id` that this one has handled it: on its replyChannel (null: on CHANGE_CHANNEL). */
  private confirm(id: string, maker: string | null): void {
    const client = this.client;
    if (!client || !this.listening) return;
    const channel = maker === null ? CHANGE_CHANNEL : replyChannel(maker);
    this.repository.notifyOn(client, channel, JSON.stringify({ ack: id, from: this.instance } satisfies Message)).catch(() => undefined);
  }

  private handle(topic: string, key: string): void {
    for (const h of this.handlers.get(topic) ?? []) h(key);
  }

  private reset(): void {
    for (const h of this.resetHandlers) h();
  }
}
