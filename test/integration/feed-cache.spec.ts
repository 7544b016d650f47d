import type { DataSource } from 'typeorm';
import { ChangeFeed } from '../../src/database/change-feed';
import { ChangeFeedRepository } from '../../src/database/change-feed.repository';
import { createDataSource } from '../../src/database/data-source';
import { MerchantDirectory } from '../../src/modules/merchants/merchant-directory';
import { MerchantEntity } from '../../src/modules/merchants/merchant.entity';
import { MerchantRepository } from '../../src/modules/merchants/merchant.repository';
import { createShellMerchant } from '../factories/merchants';
import { createPartner } from '../factories/partners';
import { startService, testConfig, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { waitFor } from '../support/wait';

/**
 * Issue 10 point 11: a cache kept by the change feed answers from memory only while the feed is live. The
 * merchant cache of request creation, on the run's real database, with changes made behind its back (no
 * notification at all), so only the feed's state decides whether it sees them.
 */
describe('merchant cache and the change feed', () => {
  let svc: TestService;
  let ds: DataSource;
  let feed: ChangeFeed;
  let directory: MerchantDirectory;
  let merchantId: string;

  const setDisabled = (disabled: boolean) => sql(`UPDATE merchants SET disabled = $2 WHERE id = $1`, [merchantId, disabled]);
  /** Enabled again, announced, and seen so: the next test starts from a known cache. */
  const enableAnnounced = async () => {
    await setDisabled(false);
    await feed.publish('merchants', merchantId);
    await waitFor(async () => (await directory.forCreate(merchantId))?.disabled === false);
  };

  beforeAll(async () => {
    svc = await startService();
    const partner = await createPartner(svc);
    merchantId = (await createShellMerchant(svc, partner.testKey)).merchant_id;
    ds = createDataSource(testConfig().databaseUrl, 2);
    await ds.initialize();
    feed = new ChangeFeed(testConfig(), new ChangeFeedRepository(ds));
    directory = new MerchantDirectory(new MerchantRepository(ds.getRepository(MerchantEntity)), feed);
    directory.onModuleInit();
    await feed.onModuleInit();
  });

  afterAll(async () => {
    await feed?.onApplicationShutdown();
    await ds?.destroy();
    await svc?.close();
    await closeSql();
  });

  it('answers from memory while live, and evicts on a notification', async () => {
    expect(feed.live).toBe(true);
    expect((await directory.forCreate(merchantId))?.disabled).toBe(false);
    await setDisabled(true);
    // Unannounced: the cached answer stands.
    expect((await directory.forCreate(merchantId))?.disabled).toBe(false);
    await feed.publish('merchants', merchantId);
    await waitFor(async () => (await directory.forCreate(merchantId))?.disabled === true);
    await enableAnnounced();
  });

  it('drops everything when listening resumes after a lost connection', async () => {
    expect((await directory.forCreate(merchantId))?.disabled).toBe(false);
    await setDisabled(true);
    // Whatever was announced while the connection was down is lost: the reset must clear the cache.
    await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [feed.connectionName]);
    await waitFor(async () => (await directory.forCreate(merchantId))?.disabled === true);
    await waitFor(async () => feed.live);
    await enableAnnounced();
  });

  it('a change made through change() on another instance is evicted here before change() returns', async () => {
    const otherFeed = new ChangeFeed(testConfig(), new ChangeFeedRepository(ds));
    const other = new MerchantDirectory(new MerchantRepository(ds.getRepository(MerchantEntity)), otherFeed);
    other.onModuleInit();
    await otherFeed.onModuleInit();
    try {
      for (let round = 0; round < 5; round++) {
        await waitFor(async () => feed.live);
        expect((await directory.forCreate(merchantId))?.disabled).toBe(false);
        await other.change(merchantId, (em) => em.query(`UPDATE merchants SET disabled = true WHERE id = $1`, [merchantId]));
        // No waiting: change() returned, so no instance answers the old row any more.
        expect({ round, disabled: (await directory.forCreate(merchantId))?.disabled }).toEqual({ round, disabled: true });
        await enableAnnounced();
      }
    } finally {
      await otherFeed.onApplicationShutdown();
    }
  });

  it('reads through to Postgres on every call while the feed is not live, and stores nothing', async () => {
    await waitFor(async () => feed.live);
    expect((await directory.forCreate(merchantId))?.disabled).toBe(false);
    await feed.onApplicationShutdown();
    expect(feed.live).toBe(false);
    await setDisabled(true);
    expect((await directory.forCreate(merchantId))?.disabled).toBe(true);
    await setDisabled(false);
    expect((await directory.forCreate(merchantId))?.disabled).toBe(false);
    await setDisabled(true);
    expect((await directory.forCreate(merchantId))?.disabled).toBe(true);
  });
});
