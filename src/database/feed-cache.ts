import type { ChangeFeed } from './change-feed';

/**
 * An in-process cache kept honest by the change feed (Postgres LISTEN/NOTIFY), never by Redis: owners evict
 * on their topic's notifications, and everything is dropped whenever notifications may have been missed.
 * While the feed is not live it neither answers nor stores: callers read through to Postgres. The TTL only
 * bounds memory and age; correctness comes from the feed.
 */
export class FeedCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  /** Counts evictions, so a read of Postgres that raced one is not stored. */
  private generation = 0;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly limits: { ttlMs: number; maxEntries: number },
  ) {
    feed.onReset(() => this.clear());
  }

  /** The cached value; undefined when there is none, it is too old, or the feed is not live (read through). */
  get(key: string, now = Date.now()): V | undefined {
    if (!this.feed.live) return undefined;
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expires > now) return hit.value;
    this.entries.delete(key);
    return undefined;
  }

  /** Taken before reading Postgres and handed to set(): an eviction meanwhile keeps that answer out. */
  mark(): number {
    return this.generation;
  }

  set(key: string, value: V, mark: number, now = Date.now()): void {
    if (mark !== this.generation || !this.feed.live || this.limits.ttlMs <= 0) return;
    this.entries.delete(key);
    // Maps iterate in insertion order: the first entry is the oldest load.
    if (this.entries.size >= this.limits.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, expires: now + this.limits.ttlMs });
  }

  delete(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  deleteWhere(match: (value: V) => boolean): void {
    this.generation++;
    for (const [k, v] of this.entries) if (match(v.value)) this.entries.delete(k);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
