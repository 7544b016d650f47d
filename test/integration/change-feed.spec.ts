import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { ChangeFeed } from '../../src/database/change-feed';
import { CHANGE_CHANNEL, ChangeFeedRepository, replyChannel } from '../../src/database/change-feed.repository';
import { FeedCache } from '../../src/database/feed-cache';
import { createDataSource } from '../../src/database/data-source';
import { testConfig } from '../support/app';
import { closeSql, sql } from '../support/db';
import { waitFor } from '../support/wait';

/** The cache-invalidation channel on Postgres LISTEN/NOTIFY, against the run's real database. */
describe('change feed', () => {
  let ds: DataSource;
  let feed: ChangeFeed;
  const seen: string[] = [];
  let resets = 0;

  beforeAll(async () => {
    const config = testConfig();
    ds = createDataSource(config.databaseUrl, 2);
    await ds.initialize();
    feed = new ChangeFeed(config, new ChangeFeedRepository(ds));
    feed.subscribe('keys', (key) => seen.push(key));
    feed.onReset(() => resets++);
    await feed.onModuleInit();
  });

  afterAll(async () => {
    await feed.onApplicationShutdown();
    await ds.destroy();
    await closeSql();
  });

  it('is live once listening, and delivers a change published outside a transaction', async () => {
    expect(feed.live).toBe(true);
    await feed.publish('keys', 'plain');
    await waitFor(async () => seen.includes('plain'));
  });

  it('delivers a change made in a transaction when it commits, not before', async () => {
    await ds.transaction(async (em) => {
      await feed.publish('keys', 'on-commit', em);
      // A full round trip on another connection: had Postgres delivered it already, it would be here by now.
      await feed.publish('keys', 'probe');
      await waitFor(async () => seen.includes('probe'));
      expect(seen).not.toContain('on-commit');
    });
    await waitFor(async () => seen.includes('on-commit'));
  });

  it('never delivers a change whose transaction rolled back', async () => {
    await expect(
      ds.transaction(async (em) => {
        await feed.publish('keys', 'rolled-back', em);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    // Notifications arrive in commit order: once a later one is here, the rolled-back one never will be.
    await feed.publish('keys', 'after-rollback');
    await waitFor(async () => seen.includes('after-rollback'));
    expect(seen).not.toContain('rolled-back');
  });

  it('ignores other topics and malformed payloads', async () => {
    await feed.publish('merchants', 'not-for-keys');
    await new ChangeFeedRepository(ds).notify('not json');
    await feed.publish('keys', 'marker');
    await waitFor(async () => seen.includes('marker'));
    expect(seen).not.toContain('not-for-keys');
  });

  it('is not live while its connection is gone, resets caches, and listens again', async () => {
    const before = resets;
    await sql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = $1`,
      [feed.connectionName],
    );
    // The drop is seen as a reset (live turns false then; a quick reconnect may already have turned it back).
    await waitFor(async () => resets > before);
    await waitFor(async () => feed.live && resets >= before + 2, 15000);
    // Once when the connection dropped, once when listening resumed (anything sent meanwhile was lost).
    expect(resets).toBeGreaterThanOrEqual(before + 2);
    await feed.publish('keys', 'after-reconnect');
    await waitFor(async () => seen.includes('after-reconnect'));
  });

  it('drops and reopens a listening connection that carries nothing back any more', async () => {
    await waitFor(async () => feed.live);
    const before = resets;
    // The connection stays open but answers nothing (a half-open link never errors by itself).
    const stuck = (feed as unknown as { client: Client }).client;
    const busy = stuck.query('SELECT pg_sleep(30)').catch(() => undefined);
    await waitFor(async () => !feed.live);
    await waitFor(async () => feed.live && resets >= before + 2, 20000);
    expect((feed as unknown as { client: Client }).client).not.toBe(stuck);
    await feed.publish('keys', 'after-silence');
    await waitFor(async () => seen.includes('after-silence'));
    await busy;
  });

  describe('across instances', () => {
    let other: ChangeFeed;
    const otherSeen: string[] = [];

    beforeAll(async () => {
      other = new ChangeFeed(testConfig(), new ChangeFeedRepository(ds));
      other.subscribe('keys', (key) => otherSeen.push(key));
      await other.onModuleInit();
    });

    afterAll(async () => {
      await other.onApplicationShutdown();
    });

    it('a change returns only once every other listening instance has handled it, without waiting out the 3 s', async () => {
      await waitFor(async () => feed.live && other.live);
      for (let round = 0; round < 20; round++) {
        const key = `confirmed-${round}`;
        const started = Date.now();
        await feed.change('keys', async (_em, announce) => announce(key));
        // No waiting: the other instance evicted before change() returned. Its confirmation may arrive before
        // the query naming the listeners answers; a lost one would hold the change the full 3 s.
        expect({ round, seen: otherSeen.includes(key), slow: Date.now() - started >= 2000 }).toEqual({ round, seen: true, slow: false });
      }
    });

    it('heartbeats and confirmations go only to the instance they are for: nothing but changes on the shared channel', async () => {
      // A third listener, as any other instance is: it hears the shared channel and nothing of feed's own.
      const watcher = new Client({ connectionString: testConfig().databaseUrl });
      const heard: Array<{ channel: string; payload: string }> = [];
      watcher.on('notification', (n) => heard.push({ channel: n.channel, payload: n.payload ?? '' }));
      await watcher.connect();
      try {
        await watcher.query(`LISTEN ${CHANGE_CHANNEL}`);
        await watcher.query(`LISTEN ${watcher.escapeIdentifier(replyChannel(feed.instance))}`);
        await waitFor(async () => feed.live && other.live);
        await feed.change('keys', async (_em, announce) => announce('routed'));
        expect(otherSeen).toContain('routed');
        // Both instances heartbeat every 0.5 s: wait for three of feed's on its own channel, and other's
        // confirmation there, then nothing else may have come through the shared channel.
        await waitFor(async () => heard.filter((h) => h.channel === replyChannel(feed.instance) && h.payload.includes('"ping"')).length >= 3);
        // other confirmed once, on feed's own channel. Any further instance listening on this database (in
        // production every instance does; here one still closing) confirms too, also only there.
        const acks = heard.filter((h) => JSON.parse(h.payload).ack !== undefined);
        expect(acks.filter((h) => JSON.parse(h.payload).from === other.instance)).toEqual([
          { channel: replyChannel(feed.instance), payload: expect.any(String) },
        ]);
        expect(acks.filter((h) => h.channel !== replyChannel(feed.instance))).toEqual([]);
        const shared = heard.filter((h) => h.channel === CHANGE_CHANNEL).map((h) => JSON.parse(h.payload) as Record<string, unknown>);
        expect(shared).toEqual([expect.objectContaining({ topic: 'keys', key: 'routed', from: feed.instance })]);
      } finally {
        await watcher.end();
      }
    });

    it('confirms on the shared channel a change from an instance that does not listen on its own (a rolling deploy)', async () => {
      await waitFor(async () => feed.live && other.live);
      const watcher = new Client({ connectionString: testConfig().databaseUrl });
      const acks: string[] = [];
      watcher.on('notification', (n) => n.payload?.includes('"ack"') && acks.push(n.payload));
      await watcher.connect();
      try {
        await watcher.query(`LISTEN ${CHANGE_CHANNEL}`);
        // What an instance of the earlier version sends: no `direct`.
        await new ChangeFeedRepository(ds).notify(JSON.stringify({ topic: 'keys', key: 'old-maker', id: 'old.1', from: 'oldinstance' }));
        await waitFor(async () => acks.length >= 2);
        expect(acks.map((a) => JSON.parse(a) as Record<string, unknown>)).toEqual(
          expect.arrayContaining([{ ack: 'old.1', from: feed.instance }, { ack: 'old.1', from: other.instance }]),
        );
      } finally {
        await watcher.end();
      }
    });

    it('a stalled instance whose wall clock steps back does not answer from a stale entry once a change returned', async () => {
      const cache = new FeedCache<string>(other, { ttlMs: 60000, maxEntries: 10 });
      other.subscribe('keys', (key) => cache.delete(key));
      await waitFor(async () => other.live);
      cache.set('stepped', 'before the change', cache.mark());
      expect(cache.get('stepped')).toBe('before the change');
      // The other instance's listening connection is busy, so nothing reaches it (a stalled process or link)...
      const busy = (other as unknown as { client: Client }).client.query('SELECT pg_sleep(5)');
      // ...and its wall clock is stepped back (NTP) a minute.
      const wall = Date.now.bind(Date);
      const clock = jest.spyOn(Date, 'now').mockImplementation(() => wall() - 60000);
      try {
        await feed.change('keys', async (_em, announce) => announce('stepped'));
        expect(otherSeen).not.toContain('stepped');
        expect(cache.get('stepped')).toBeUndefined();
      } finally {
        clock.mockRestore();
        await busy;
      }
      await waitFor(async () => otherSeen.includes('stepped') && other.live);
    });

    it('a change whose listener query fails still waits as long as a silent listener could stay live', async () => {
      const listeners = jest.spyOn(ChangeFeedRepository.prototype, 'listeners').mockRejectedValue(new Error('too many connections'));
      try {
        const started = Date.now();
        await feed.change('keys', async (_em, announce) => announce('listeners-unknown'));
        expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
      } finally {
        listeners.mockRestore();
      }
    });

    it('a listener that never confirms holds a change only until it can no longer be live', async () => {
      // Named like an instance, listening, but never answering: a stalled process.
      const stalled = new Client({ connectionString: testConfig().databaseUrl });
      await stalled.connect();
      try {
        await stalled.query('LISTEN prs_changes');
        await stalled.query(`SET application_name = 'prs-change-feed:stalled'`);
        const started = Date.now();
        await feed.change('keys', async (_em, announce) => announce('past-a-stalled-listener'));
        // Held past the heartbeat window (2 s): by then the stalled instance would read through, not answer.
        expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
        expect(otherSeen).toContain('past-a-stalled-listener');
      } finally {
        await stalled.end();
      }
    });

    it('an instance is not live when its newest heard heartbeat is over 2 s old', async () => {
      await waitFor(async () => other.live);
      const now = performance.now();
      const clock = jest.spyOn(performance, 'now').mockReturnValue(now + 2600);
      try {
        expect(other.live).toBe(false);
      } finally {
        clock.mockRestore();
      }
      await waitFor(async () => other.live);
    });
  });

  it('a link that stays silent before its first heartbeat is dropped and opened again (start-up does not hang)', async () => {
    // The first heartbeat is sent into a link that never answers; everything else is the real database.
    let stall = true;
    class StallingFirstPing extends ChangeFeedRepository {
      override async notifyOn(client: Client, channel: string, payload: string): Promise<void> {
        if (stall && payload.includes('"ping"')) {
          stall = false;
          return new Promise<void>(() => undefined);
        }
        return super.notifyOn(client, channel, payload);
      }
    }
    const late = new ChangeFeed(testConfig(), new StallingFirstPing(ds));
    try {
      await late.onModuleInit();
      expect(late.live).toBe(false);
      await waitFor(async () => late.live, 15_000);
    } finally {
      await late.onApplicationShutdown();
    }
  }, 40_000);
});
