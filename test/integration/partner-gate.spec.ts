import { randomUUID } from 'node:crypto';
import { RedisConnections } from '../../src/common/redis/redis.module';
import { PartnerGate } from '../../src/modules/webhooks/partner-gate';
import { testConfig } from '../support/app';
import { waitFor } from '../support/wait';

/** The per-partner delivery gate on the real Redis, shared by every worker (DESIGN §7 webhook fairness). */
describe('partner delivery gate', () => {
  const config = testConfig({ WEBHOOK_PARTNER_CONCURRENCY: '3' });
  let redis: RedisConnections;
  let otherRedis: RedisConnections;
  let gate: PartnerGate;
  let otherWorker: PartnerGate;
  const partner = () => `p-${randomUUID()}`;
  const members = (n: number, tag = 'e') => Array.from({ length: n }, (_, i) => `${tag}${i}-1`);

  beforeAll(async () => {
    // Two workers: each its own connection, the same Redis and prefix.
    redis = new RedisConnections(config);
    otherRedis = new RedisConnections(config);
    await waitFor(async () => redis.main.status === 'ready' && otherRedis.main.status === 'ready');
    // No Postgres here: the gate's first script finds its state unknown and seeds it with no attempt claimed.
    const nothingClaimed = { list: async () => [] };
    gate = new PartnerGate(config, redis, nothingClaimed);
    otherWorker = new PartnerGate(config, otherRedis, nothingClaimed);
  });

  afterAll(async () => {
    await redis.onApplicationShutdown();
    await otherRedis.onApplicationShutdown();
  });

  it('admits at most the limit, oldest first; the rest wait, and each release admits the next', async () => {
    const p = partner();
    const first = await gate.admit(p, members(5));
    expect(first).toEqual({ added: 5, admitted: ['e0-1', 'e1-1', 'e2-1'] });
    expect(await gate.state(p)).toEqual({ waiting: 2, running: 3 });
    // Later arrivals queue behind the waiting ones.
    expect(await otherWorker.admit(p, ['late-1'])).toEqual({ added: 1, admitted: [] });
    expect(await otherWorker.release(p, 'e1-1')).toEqual(['e3-1']);
    expect(await gate.release(p, 'e0-1')).toEqual(['e4-1']);
    expect(await gate.release(p, 'e2-1')).toEqual(['late-1']);
    expect(await gate.state(p)).toEqual({ waiting: 0, running: 3 });
  });

  it('releases made together (one script call) free and admit in the order they were asked, partners kept apart', async () => {
    const [p, q] = [partner(), partner()];
    await gate.admit(p, members(6));
    await gate.admit(q, members(4, 'q'));
    // One turn of the event loop: three of p's slots and one of q's, interleaved, plus a member holding no slot.
    const replies = await Promise.all([
      gate.release(p, 'e0-1'),
      gate.release(q, 'q2-1'),
      gate.release(p, 'e1-1'),
      gate.release(p, 'not-held-1'),
      gate.release(p, 'e2-1'),
    ]);
    expect(replies).toEqual([['e3-1'], ['q3-1'], ['e4-1'], [], ['e5-1']]);
    expect(await gate.state(p)).toEqual({ waiting: 0, running: 3 });
    expect(await gate.state(q)).toEqual({ waiting: 0, running: 3 });
    // A partner with nobody waiting: a release frees the slot for the next admission.
    expect(await gate.release(q, 'q0-1')).toEqual([]);
    expect((await otherWorker.admit(q, ['late-1'])).admitted).toEqual(['late-1']);
  });

  it('a batch of releases drops expired leases (a worker that died) and fills those slots too', async () => {
    const p = partner();
    await gate.admit(p, members(6));
    await redis.main.zadd(`${config.redisPrefix}:webhook-slots:${p}`, Date.now() - 1, 'e1-1');
    const replies = await Promise.all([gate.release(p, 'e0-1'), gate.release(p, 'e2-1')]);
    expect(replies).toEqual([['e3-1', 'e4-1'], ['e5-1']]);
    expect(await gate.state(p)).toEqual({ waiting: 0, running: 3 });
  });

  it('a batch whose script fails fails every release in it, of every partner; what it did before stays, leased', async () => {
    const [p, q] = [partner(), partner()];
    await gate.admit(p, members(4));
    // q's waiting key holds a string, not a sorted set: Redis stops the script at q's release (WRONGTYPE).
    await redis.main.set(`${config.redisPrefix}:webhook-waiting:${q}`, 'not a sorted set');
    await redis.main.zadd(`${config.redisPrefix}:webhook-slots:${q}`, Date.now() + 60_000, 'q0-1');
    const replies = await Promise.allSettled([gate.release(p, 'e0-1'), gate.release(q, 'q0-1')]);
    expect(replies.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    // Redis keeps what the script did before the error: p's slot was freed and e3 admitted, and nobody was told.
    // e3 holds its slot under the admission lease only, so the limit holds; the outbox re-drive sends it when
    // the lease runs out (the same as a reply lost after the script ran).
    const slots = await redis.main.zrange(`${config.redisPrefix}:webhook-slots:${p}`, 0, -1, 'WITHSCORES');
    expect(slots.filter((_, i) => i % 2 === 0).sort()).toEqual(['e1-1', 'e2-1', 'e3-1']);
    expect(Number(slots[slots.indexOf('e3-1') + 1])).toBeLessThan(Date.now() + 120_000);
    expect(await gate.state(p)).toEqual({ waiting: 0, running: 3 });
    await redis.main.del(`${config.redisPrefix}:webhook-waiting:${q}`);
  });

  it('adds nothing twice: a member already waiting or holding a slot is not queued again', async () => {
    const p = partner();
    await gate.admit(p, members(4));
    expect(await otherWorker.admit(p, ['e0-1', 'e3-1'])).toEqual({ added: 0, admitted: [] });
    expect(await gate.state(p)).toEqual({ waiting: 1, running: 3 });
  });

  it('readmit hands back a member that holds a slot (its worker died running it), keeping the slot; others as admit', async () => {
    const p = partner();
    await gate.admit(p, members(4));
    expect(await otherWorker.readmit(p, ['e1-1', 'e3-1'])).toEqual({ added: 1, admitted: ['e1-1'] });
    expect(await gate.state(p)).toEqual({ waiting: 1, running: 3 });
  });

  it('after a seeding gave a partner more slots than its limit, the re-drive hands back stalled members only up to the limit; the others wait first in line', async () => {
    // Redis lost the gate's state while Postgres held six of p's attempts 'delivering', none in flight: each
    // sent, its slot freed, and its record refused. The seeding gives all six a slot for what is left of its
    // lease; a re-drive that finds them stalled before those leases end (at their edge, or with the clocks
    // apart) readmits each. Handed back each in its own slot, all six ran at once (limit 3).
    const p = partner();
    const stalled = members(6, 's');
    // A prefix of its own: a gate whose state is unknown, so the first script seeds it from this list.
    const lost = testConfig({ WEBHOOK_PARTNER_CONCURRENCY: '3', REDIS_PREFIX: `${config.redisPrefix}-lost-${randomUUID().slice(0, 8)}` });
    const seeded = new RedisConnections(lost);
    try {
      await waitFor(async () => seeded.main.status === 'ready');
      const afterLoss = new PartnerGate(lost, seeded, { list: async (leaseMs) => stalled.map((member) => ({ partnerId: p, member, leaseLeftMs: leaseMs })) });
      const handedBack: string[] = [];
      for (const m of stalled) handedBack.push(...(await afterLoss.readmit(p, [m])).admitted);
      expect(handedBack).toEqual(['s3-1', 's4-1', 's5-1']);
      const started: string[] = [];
      for (const m of handedBack) if (await afterLoss.start(p, m)) started.push(m);
      expect(started).toEqual(handedBack);
      expect(await afterLoss.state(p)).toEqual({ waiting: 3, running: 3 });
      // The ones that gave their slot up, first in line (in member order among themselves), run as the others end.
      expect(await afterLoss.release(p, 's3-1')).toEqual(['s0-1']);
      expect(await afterLoss.release(p, 's4-1')).toEqual(['s1-1']);
    } finally {
      await seeded.onApplicationShutdown();
    }
  });

  it('a seeding gives each attempt its slot until its lease from its claim ends, not a whole lease from the seeding', async () => {
    // Redis lost the gate's state while Postgres held p's three attempts 'delivering', claimed nearly a lease ago
    // (their POSTs over, their records refused): 300 ms left of each.
    const p = partner();
    const lost = testConfig({ WEBHOOK_PARTNER_CONCURRENCY: '3', REDIS_PREFIX: `${config.redisPrefix}-lost-${randomUUID().slice(0, 8)}` });
    const seeded = new RedisConnections(lost);
    try {
      await waitFor(async () => seeded.main.status === 'ready');
      const asked: number[] = [];
      const afterLoss = new PartnerGate(lost, seeded, {
        list: async (leaseMs) => {
          asked.push(leaseMs);
          // And one with nothing left (its claim a whole lease ago as the seeding ran): no slot.
          return [...members(3, 'c').map((member) => ({ partnerId: p, member, leaseLeftMs: 300 })), { partnerId: p, member: 'over-1', leaseLeftMs: 0 }];
        },
      });
      expect(await afterLoss.admit(p, ['next-1'])).toEqual({ added: 1, admitted: [] });
      expect(asked).toEqual([lost.webhookTimeoutMs + lost.webhookStallMarginMs]);
      expect(await afterLoss.state(p)).toEqual({ waiting: 1, running: 3 });
      // Seeded for a whole lease from the seeding, they held the partner's slots for WEBHOOK_TIMEOUT_MS +
      // WEBHOOK_STALL_MARGIN_MS (38 s at the defaults) with nothing in flight.
      await waitFor(async () => (await afterLoss.state(p)).running === 0, 5_000);
      expect(await afterLoss.admit(p, ['later-1'])).toEqual({ added: 1, admitted: ['next-1', 'later-1'] });
    } finally {
      await seeded.onApplicationShutdown();
    }
  });

  it('keeps partners apart', async () => {
    const [a, b] = [partner(), partner()];
    await gate.admit(a, members(10));
    expect((await gate.admit(b, members(2, 'b'))).admitted).toEqual(['b0-1', 'b1-1']);
  });

  it('a slot whose lease ran out (its worker died) is given to the next waiting member at the next admission', async () => {
    const p = partner();
    await gate.admit(p, members(4));
    // The worker holding e0 died: its lease is in the past now.
    await redis.main.zadd(`${config.redisPrefix}:webhook-slots:${p}`, Date.now() - 1, 'e0-1');
    expect(await otherWorker.admit(p, [])).toEqual({ added: 0, admitted: ['e3-1'] });
  });

  it('a job that starts renews its slot past the admission lease', async () => {
    const p = partner();
    await gate.admit(p, ['e0-1']);
    expect(await gate.start(p, 'e0-1')).toBe(true);
    const score = Number(await redis.main.zscore(`${config.redisPrefix}:webhook-slots:${p}`, 'e0-1'));
    expect(score).toBeGreaterThan(Date.now() + config.webhookTimeoutMs);
  });

  it('a job whose lease ran out while it waited runs only in a free slot; else it goes back to the front of the line', async () => {
    const p = partner();
    expect((await gate.admit(p, members(3))).admitted).toEqual(['e0-1', 'e1-1', 'e2-1']);
    // e0's job waited in the queue past its lease (every worker down): the next admission gave its slot away.
    await redis.main.zadd(`${config.redisPrefix}:webhook-slots:${p}`, Date.now() - 1, 'e0-1');
    expect((await gate.admit(p, ['late-1'])).admitted).toEqual(['late-1']);
    expect(await otherWorker.start(p, 'e0-1')).toBe(false);
    expect(await gate.state(p)).toEqual({ waiting: 1, running: 3 });
    // First in line when a slot frees, ahead of anything that asked before it was sent back.
    await gate.admit(p, ['after-1']);
    expect(await gate.release(p, 'e1-1')).toEqual(['e0-1']);
    // A free slot lets a lapsed job run at once.
    await redis.main.zadd(`${config.redisPrefix}:webhook-slots:${p}`, Date.now() - 1, 'e2-1');
    expect(await gate.start(p, 'e2-1')).toBe(true);
  });

  it('never admits more than the limit under concurrent admissions from two workers', async () => {
    const p = partner();
    const replies = await Promise.all(members(40).map((m, i) => (i % 2 ? gate : otherWorker).admit(p, [m])));
    expect(replies.flatMap((r) => r.admitted)).toHaveLength(3);
    expect(await gate.state(p)).toEqual({ waiting: 37, running: 3 });
  });

  /**
   * Leases are kept on Redis's clock: a worker whose wall clock trails Redis's by more than a lease wrote leases
   * already past for Redis, which dropped them (and the slots key) as they were written, so every admission
   * found every slot free; one running ahead dropped the other workers' leases early.
   */
  describe('workers whose clocks disagree with Redis', () => {
    let clock: jest.SpyInstance | undefined;
    afterEach(() => clock?.mockRestore());
    const skew = (ms: number) => {
      const wall = Date.now.bind(Date);
      clock = jest.spyOn(Date, 'now').mockImplementation(() => wall() + ms);
    };

    it('a worker ten minutes behind still holds the partner to its limit', async () => {
      const p = partner();
      skew(-600_000);
      expect((await gate.admit(p, members(5))).admitted).toEqual(['e0-1', 'e1-1', 'e2-1']);
      expect(await gate.start(p, 'e0-1')).toBe(true);
      expect((await otherWorker.admit(p, ['late-1'])).admitted).toEqual([]);
      expect(await gate.state(p)).toEqual({ waiting: 3, running: 3 });
    });

    it('a worker ten minutes ahead does not take the slots other workers hold', async () => {
      const p = partner();
      expect((await gate.admit(p, members(3))).admitted).toHaveLength(3);
      skew(600_000);
      expect((await otherWorker.admit(p, ['late-1'])).admitted).toEqual([]);
      expect(await otherWorker.start(p, 'late-1')).toBe(false);
      expect(await gate.state(p)).toEqual({ waiting: 1, running: 3 });
    });
  });
});
