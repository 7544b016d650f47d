/**
 * The API side of bench/webhooks.ts's latency phase, in a process of its own as in production: it commits
 * webhook events at a steady rate, each in a transaction of its own (the outbox row a verification or a proof
 * writes), and hands each to WebhookRelay.enqueue after its commit, as the service's request handlers do. It
 * reports the wall-clock time of each commit, which bench/webhooks.ts matches with the receiver's time of receipt.
 *
 * Started by bench/webhooks.ts with DATABASE_URL, REDIS_URL and REDIS_PREFIX in its environment; it answers
 * {ready} once the service context is up, then runs one {produce} message and answers {commits}.
 */
import { Pool } from 'pg';
import { start } from '../src/bootstrap';
import { loadConfig } from '../src/config/config';
import { WebhookRelay } from '../src/modules/webhooks/webhook-relay';

export interface ProduceOrder {
  produce: {
    /** Events committed per second. */
    rate: number;
    /** Events before the measured ones, at the same rate (their times are not reported). */
    warmup: number;
    /** Measured events. */
    events: number;
    /** Events go to these partners in turn, each referencing its partner's request. */
    fixtures: Array<{ partnerId: string; requestId: string }>;
  };
}

export interface ProduceReport {
  /**
   * [event id, commit time, scheduled time] of each measured event, in ms on the machine's monotonic clock
   * (monotonicMs, which every process reads alike). Commit minus schedule is the producer's own lag.
   */
  commits: Array<[string, number, number]>;
  /** Measured events per second of commit time (below the asked rate when the database could not keep up). */
  achievedRate: number;
  /** This process's CPU time per event (measured and warm-up alike), in ms. */
  cpuMs: number;
}

/** CLOCK_MONOTONIC in ms: on Linux one clock for every process, and never stepped (unlike the wall clock). */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

async function produce(relay: WebhookRelay, pool: Pool, o: ProduceOrder['produce']): Promise<ProduceReport> {
  const total = o.warmup + o.events;
  const commits: Array<[string, number, number]> = [];
  const pending = new Set<Promise<void>>();
  const one = async (i: number, scheduledAt: number) => {
    const f = o.fixtures[i % o.fixtures.length];
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state)
       VALUES ($1, $2, 'payment.proof_attached', true, true, 'pending') RETURNING id`,
      [f.partnerId, f.requestId],
    );
    if (i >= o.warmup) commits.push([rows[0].id, monotonicMs(), scheduledAt]);
    await relay.enqueue([rows[0].id]);
  };
  const cpu0 = process.cpuUsage();
  const t0 = monotonicMs();
  let issued = 0;
  while (issued < total) {
    // Open loop: event i is due at t0 + i / rate whatever earlier events are doing. A moment the producer
    // (or the database's commits) falls behind shows as lag, reported beside the latency, not as a lower rate.
    const due = Math.min(total, Math.floor(((monotonicMs() - t0) / 1000) * o.rate));
    while (issued < due) {
      const i = issued++;
      const p = one(i, t0 + (i * 1000) / o.rate).finally(() => pending.delete(p));
      pending.add(p);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(pending);
  const times = commits.map(([, t]) => t);
  const span = (Math.max(...times) - Math.min(...times)) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { commits, achievedRate: span > 0 ? (commits.length - 1) / span : NaN, cpuMs: (cpu.user + cpu.system) / 1000 / total };
}

async function main(): Promise<void> {
  const config = loadConfig({
    NODE_ENV: 'development',
    DATABASE_URL: process.env.DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL,
    REDIS_PREFIX: process.env.REDIS_PREFIX,
    PORT: '0',
    ADMIN_PORT: '0',
    LOG_LEVEL: 'warn',
  });
  const running = await start(config, { http: false, worker: false }, { logger: false });
  const relay = running.app.get(WebhookRelay);
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  process.on('message', (m: ProduceOrder) => {
    if (!m.produce) return;
    produce(relay, pool, m.produce).then(
      (report) => process.send!(report),
      (e: Error) => process.send!({ error: e.stack ?? e.message }),
    );
  });
  process.once('SIGTERM', () => {
    void Promise.all([running.close(), pool.end()]).then(() => process.exit(0));
  });
  process.send!({ ready: true });
}

void main().catch((e: Error) => {
  console.error(e);
  process.exit(1);
});
