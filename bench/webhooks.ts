/**
 * Webhook delivery throughput (issue 4): deliveries per second through the real delivery processor (BullMQ
 * worker, claim and record in Postgres, signing, keep-alive POST) to a local receiver answering 200, against a
 * bare loop of signed POSTs (http.request + keep-alive agent, 50 in flight) to the same receiver, interleaved
 * within each repetition; the result is the median of the per-repetition ratios (PERFORMANCE.md's method).
 *
 * The receiver is a child process, so neither side shares its event loop with it. The worker runs in this
 * process on the database prs_bench_webhooks (recreated) with Redis prefix prs-bench-wh. Each repetition
 * records BENCH_WEBHOOK_EVENTS events (default 20000) with the queue paused, then resumes it and times until
 * all are recorded as delivered; the bare loop sends four times as many POSTs (it is that much faster). Both
 * run for several seconds, after a warm-up of BENCH_WEBHOOK_WARMUP deliveries and as many bare POSTs (default
 * 5000), as PERFORMANCE.md's method asks (2 s of warm-up, then ~10 s): until the 2026-11-28 session they ran
 * 3000 events after 500, about one second after a tenth of one, which timed the worker's ramp-up and its last
 * partners' tail as much as its steady rate (rep 1 of a run was up to a third slower than rep 2). BENCH_WEBHOOK_PARTNERS (default 1) spreads the events
 * over that many partners, all pointing at the receiver.
 *   node -r @swc-node/register bench/webhooks.ts        (or through `npm run bench`)
 * BENCH_WEBHOOKS_DATABASE_URL and BENCH_WEBHOOKS_REDIS_PREFIX move it aside, to run beside a bench.
 * Then the latency phase: a producer process commits BENCH_WEBHOOK_RATE events per second (default 1000; 0 skips
 * it) for 2 + 10 s, as the API does (commit, then the relay), and the receiver's time of first receipt of each
 * measured event, minus its commit time, gives commit-to-receipt p50/p99/max (goal: p99 under 1 s at 1,000/s).
 * BENCH_WEBHOOK_PROFILE=<file.cpuprofile> writes a V8 CPU profile of the service runs alone (not the bare loop);
 * summarise it with bench/profile.ts.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import Redis from 'ioredis';
import { Client } from 'pg';
import { signWebhook } from '../sdk/webhook-verify/src/index';
import { start, type Running } from '../src/bootstrap';
import { QUEUES } from '../src/common/queue/queues';
import { SecretBox } from '../src/common/crypto/secret-box';
import { loadConfig, loadSecretKeys } from '../src/config/config';
import { migrate } from '../src/database/data-source';
import { WEBHOOK_USER_AGENT } from '../src/modules/webhooks/payload';
import { WebhookRelay } from '../src/modules/webhooks/webhook-relay';
import { type Child, cleanup, startNode } from './children';
import { dropDatabase, SWC } from './database';
import type { ProduceOrder, ProduceReport } from './webhook-producer';

const DATABASE_URL = process.env.BENCH_WEBHOOKS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/prs_bench_webhooks';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const REDIS_PREFIX = process.env.BENCH_WEBHOOKS_REDIS_PREFIX || 'prs-bench-wh';
/** The bare loop's POSTs in flight: its fastest setting here (100 ran no faster: 8,700–10,400/s against 10,200–11,400). */
const IN_FLIGHT = 50;
const BARE_FACTOR = 4;
/** Measured seconds of the latency phase (after its 2-second warm-up). */
const LATENCY_SECONDS = 10;

// A receiver that reads each body and answers 200 with an empty body, keep-alive. Between 'record' and
// 'times' it also notes when each delivery id first arrived (the latency phase), on the machine's monotonic
// clock (CLOCK_MONOTONIC through hrtime: the same clock in every process).
const RECEIVER_SOURCE = `
const http = require('node:http');
let n = 0;
let times = null;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    n++;
    const id = req.headers['x-service-delivery'];
    if (times && !times.has(id)) times.set(id, Number(process.hrtime.bigint()) / 1e6);
    res.writeHead(200, { 'content-length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 65000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (m) => {
  if (m === 'count') process.send({ count: n });
  if (m === 'record') { times = new Map(); process.send({ recording: true }); }
  if (m === 'seen') process.send({ seen: times ? times.size : 0 });
  if (m === 'times') { process.send({ times: [...(times ?? [])] }); times = null; }
});
`;

const log = (msg: string) => console.log(`[bench:webhooks] ${msg}`);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function startReceiver(): Promise<{ child: Child; url: string }> {
  const child = startNode('webhook receiver', ['-e', RECEIVER_SOURCE]);
  const port = await new Promise<number>((resolve, reject) => {
    child.proc.once('message', (m: { port?: number }) => (m.port ? resolve(m.port) : reject(new Error('receiver sent no port'))));
    void child.exited.then((how) => reject(new Error(`receiver exited (${how}):\n${child.tail()}`)));
  });
  return { child, url: `http://127.0.0.1:${port}/hook` };
}

async function clearRedisPrefix(): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${REDIS_PREFIX}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

interface Fixture {
  partnerId: string;
  requestId: string;
  secret: string;
}

/** One partner (webhooks on, pointing at the receiver), one merchant and one request; events reference it. */
async function seed(client: Client, url: string): Promise<Fixture> {
  const secret = randomBytes(32).toString('hex');
  const [partner] = (await client.query<{ id: string }>(
    `INSERT INTO partners (slug, name, default_currency, allowed_expiry_minutes, default_expiry_minutes)
     VALUES ($1, 'Bench webhooks', 'usd', '{60}', 60) RETURNING id`,
    [`bench-wh-${randomBytes(4).toString('hex')}`],
  )).rows;
  await client.query(
    `INSERT INTO webhook_endpoints (partner_id, url, enabled, enabled_at, secret) VALUES ($1, $2, true, now(), $3)`,
    // Stored sealed, under the key the bench's service (NODE_ENV=development, no SECRET_KEY) opens it with.
    [partner.id, url, new SecretBox(loadSecretKeys({ NODE_ENV: 'development' }).secretKey).seal(secret, partner.id)],
  );
  const recipient = `0x${randomBytes(20).toString('hex')}`;
  const [merchant] = (await client.query<{ id: string }>(
    `INSERT INTO merchants (partner_id, test_mode, display_currency, wallet_address, onboarding_status,
       onboarding_token_salt, onboarding_token_hash, wallet_verified_at, terms_version, terms_accepted_at)
     VALUES ($1, true, 'usd', $2, 'complete', $3, $4, now(), 'bench', now()) RETURNING id`,
    [partner.id, recipient, randomBytes(16), randomBytes(32)],
  )).rows;
  const [request] = (await client.query<{ id: string }>(
    `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, proof_status, fiat_amount,
       fiat_currency, rate, amount, chain_id, token_address, recipient, payment_mode, metadata, expires_at, claim_until,
       tx_hash, proof_source, payer_address, amount_locked)
     VALUES (gen_random_uuid(), $1, $2, true, 'bench', 'attached', 1234, 'usd', 1, 12340000, 31337, $3, $4, 'pos',
       '{"order_id":"A-1001"}', now() + interval '1 hour', now() + interval '2 hours', $5, 'payer', $6, false)
     RETURNING id`,
    [partner.id, merchant.id, `0x${'5a'.repeat(20)}`, recipient, `0x${randomBytes(32).toString('hex')}`, `0x${randomBytes(20).toString('hex')}`],
  )).rows;
  return { partnerId: partner.id, requestId: request.id, secret };
}

/** `n` events spread evenly over the fixtures' partners, interleaved (as many partners' traffic would be). */
async function recordEvents(client: Client, fs: Fixture[], n: number): Promise<string[]> {
  const rows = await client.query<{ id: string }>(
    `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state)
     SELECT ($1::uuid[])[1 + i % cardinality($1::uuid[])], ($2::uuid[])[1 + i % cardinality($2::uuid[])],
            'payment.proof_attached', true, true, 'pending'
       FROM generate_series(0, $3 - 1) AS i
     ORDER BY i
     RETURNING id`,
    [fs.map((f) => f.partnerId), fs.map((f) => f.requestId), n],
  );
  return rows.rows.map((r) => r.id);
}

async function deliveredCount(client: Client, ids: string[]): Promise<number> {
  const r = await client.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_events WHERE id = ANY($1::uuid[]) AND state = 'delivered'`, [ids]);
  return Number(r.rows[0].n);
}

/** The next message of `child` that has `key` (after sending `message`, if given); rejects if it exits first. */
function reply<T>(child: Child, key: string, message?: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: Record<string, unknown>) => {
      if (m?.error) return done(() => reject(new Error(`${child.name}: ${String(m.error)}`)));
      if (m?.[key] !== undefined) done(() => resolve(m as T));
    };
    const onExit = () => done(() => reject(new Error(`${child.name} exited:\n${child.tail()}`)));
    const done = (then: () => void) => {
      child.proc.off('message', onMessage);
      child.proc.off('exit', onExit);
      then();
    };
    child.proc.on('message', onMessage);
    child.proc.once('exit', onExit);
    if (message !== undefined) child.proc.send(message as string);
  });
}

async function receivedCount(receiver: Child): Promise<number> {
  return (await reply<{ count: number }>(receiver, 'count', 'count')).count;
}

/**
 * Deliveries per second through the service: events relayed while the queue is paused, then timed from
 * resuming to the last delivery recorded as delivered. Progress is watched at the receiver (cheap), so the
 * watching does not load the database the worker is using; the last step checks the stored state.
 */
interface Run {
  /** Per second. */
  rate: number;
  /** This process's CPU time (user + system) per delivery or POST, in ms: the worker's, or the bare loop's. */
  cpuMs: number;
  /** The whole machine's busy CPU time per delivery or POST, in ms (Postgres, Redis and the receiver too). */
  machineCpuMs: number;
}

/**
 * Busy CPU time of the whole machine so far, in ms (from /proc/stat; NaN where there is none): user, nice,
 * system, irq and softirq. Not steal: on a virtual machine the hypervisor's time taken from this one (a third
 * of it at moments on this host) is no work of ours. Guest time is part of user already.
 */
function machineBusyMs(): number {
  try {
    const [, user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).map(Number);
    return ((user + nice + system + irq + softirq) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

function meter(): (n: number, seconds: number) => Run {
  const cpu0 = process.cpuUsage();
  const busy0 = machineBusyMs();
  return (n, seconds) => {
    const d = process.cpuUsage(cpu0);
    return { rate: n / seconds, cpuMs: (d.user + d.system) / 1000 / n, machineCpuMs: (machineBusyMs() - busy0) / n };
  };
}

async function serviceRun(running: Running, client: Client, receiver: Child, fs: Fixture[], n: number): Promise<Run> {
  const queue = running.app.get<Queue>(getQueueToken(QUEUES.webhooks));
  const relay = running.app.get(WebhookRelay);
  const ids = await recordEvents(client, fs, n);
  // Statistics for the table as it now is, as autovacuum keeps them for a table in use: the service's
  // connections planned their statements on the warm-up's few hundred rows, and without an ANALYZE (which also
  // drops those plans) they kept reading the events by a sequential scan per batch (measured 2026-11-27:
  // 1,700 rows read to claim 10, Postgres half of the machine's CPU).
  await client.query('ANALYZE webhook_events, webhook_attempts');
  await queue.pause();
  // CPU counts the relay too (marking the events relayed, the gate's admission, the jobs' add): in production
  // the API process does it after commit, here this one. Throughput is timed from resuming the queue.
  const measured = meter();
  for (let i = 0; i < ids.length; i += 1000) await relay.enqueue(ids.slice(i, i + 1000));
  const before = await receivedCount(receiver);
  const t0 = performance.now();
  await queue.resume();
  const overdue = () => {
    if (performance.now() - t0 > 300_000) throw new Error(`not all of ${n} delivered after 300 s`);
  };
  while ((await receivedCount(receiver)) - before < n) {
    overdue();
    await new Promise((r) => setTimeout(r, 20));
  }
  while ((await deliveredCount(client, ids)) < n) {
    overdue();
    await new Promise((r) => setTimeout(r, 5));
  }
  return measured(n, (performance.now() - t0) / 1000);
}

/** Commit-to-receipt latency at a steady rate of events (issue 14 item 3: p99 under 1 s at 1,000 events/s). */
export interface LatencyResult {
  /** Events per second asked of the producer, and committed by it. */
  rate: number;
  achievedRate: number;
  events: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** CPU time per event of the producer process, and of this one (the worker), in ms. */
  producerCpuMs: number;
  workerCpuMs: number;
  /** Commit minus schedule, p99 and max: how far the producer (or the database's commits) fell behind. */
  lagP99Ms: number;
  lagMaxMs: number;
  /** Measured events the receiver had not seen when the phase gave up waiting (should be 0). */
  missing: number;
}

/**
 * A producer process (bench/webhook-producer.ts, the API's part: commit, then WebhookRelay.enqueue) commits
 * `rate` events per second, spread over the fixtures' partners, for a 2-second warm-up and then `seconds`
 * measured; this process's worker delivers them to the receiver, which notes when each delivery id first
 * arrived. Latency is receipt minus commit, both read on CLOCK_MONOTONIC (process.hrtime), one clock for every
 * process on Linux. CPU per event counts this process's polling of the receiver too (every 20 ms, negligible).
 */
async function latencyRun(receiver: Child, fs: Fixture[], rate: number, seconds: number): Promise<LatencyResult> {
  const producer = startNode('webhook producer', [...SWC, path.join(__dirname, 'webhook-producer.ts')], {
    env: { ...process.env, DATABASE_URL, REDIS_URL, REDIS_PREFIX },
  });
  try {
    await reply(producer, 'ready');
    await reply(receiver, 'recording', 'record');
    const order: ProduceOrder = {
      produce: { rate, warmup: rate * 2, events: rate * seconds, fixtures: fs.map(({ partnerId, requestId }) => ({ partnerId, requestId })) },
    };
    const cpu0 = process.cpuUsage();
    const report = await reply<ProduceReport>(producer, 'commits', order);
    const total = order.produce.warmup + order.produce.events;
    const deadline = performance.now() + 120_000;
    // Distinct delivery ids the receiver has seen: a retried or repeated POST does not count twice.
    const seen = async () => (await reply<{ seen: number }>(receiver, 'seen', 'seen')).seen;
    while ((await seen()) < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const cpu = process.cpuUsage(cpu0);
    const received = new Map((await reply<{ times: Array<[string, number]> }>(receiver, 'times', 'times')).times);
    const latencies: number[] = [];
    const lags: number[] = [];
    for (const [id, committedAt, scheduledAt] of report.commits) {
      lags.push(committedAt - scheduledAt);
      const at = received.get(id);
      if (at !== undefined) latencies.push(at - committedAt);
    }
    if (latencies.length === 0) throw new Error(`latency phase: none of ${report.commits.length} events reached the receiver in 120 s`);
    if (process.env.BENCH_WEBHOOK_SERIES === '1') log(latencySeries(report.commits, received));
    const q = (xs: number[], p: number) => +xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))].toFixed(1);
    return {
      rate,
      achievedRate: Math.round(report.achievedRate),
      events: report.commits.length,
      p50Ms: q(latencies, 0.5),
      p99Ms: q(latencies, 0.99),
      maxMs: q(latencies, 1),
      producerCpuMs: +report.cpuMs.toFixed(3),
      workerCpuMs: +((cpu.user + cpu.system) / 1000 / total).toFixed(3),
      lagP99Ms: q(lags, 0.99),
      lagMaxMs: q(lags, 1),
      missing: report.commits.length - latencies.length,
    };
  } finally {
    await producer.stop();
  }
}

/**
 * BENCH_WEBHOOK_SERIES=1: commit-to-receipt by second of commit time (p50 and max of the events committed in
 * that second), to tell a standing delay from a backlog that grows or drains during the phase.
 */
function latencySeries(commits: ProduceReport['commits'], received: Map<string, number>): string {
  const t0 = commits[0]?.[1] ?? 0;
  const bySecond: number[][] = [];
  for (const [id, committedAt] of commits) {
    const at = received.get(id);
    if (at !== undefined) (bySecond[Math.floor((committedAt - t0) / 1000)] ??= []).push(at - committedAt);
  }
  return bySecond
    .map((xs, s) => {
      xs.sort((a, b) => a - b);
      return `latency second ${s}: ${xs.length} events, p50 ${xs[Math.floor(xs.length / 2)].toFixed(0)} ms, max ${xs[xs.length - 1].toFixed(0)} ms`;
    })
    .join('\n');
}

/** The same number of signed POSTs from a bare loop: http.request, keep-alive agent, IN_FLIGHT at a time. */
async function bareRun(url: string, f: Fixture, n: number): Promise<Run> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const target = new URL(url);
  let next = 0;
  let failures = 0;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({
        event: 'payment.proof_attached', delivery_id: `bare-${i}`, partner_id: f.partnerId, request_id: f.requestId,
        account_id: f.partnerId, proof_status: 'attached', proof_source: 'payer', tx_hash: null, payer_address: null,
        metadata: { order_id: 'A-1001' }, timestamp: new Date().toISOString(), test_mode: true,
      });
      const req = http.request({
        host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
        headers: {
          'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
          'x-service-signature': signWebhook(body, [f.secret], Math.floor(Date.now() / 1000)),
          'x-service-event': 'payment.proof_attached', 'x-service-delivery': `bare-${i}`, 'user-agent': WEBHOOK_USER_AGENT,
        },
      });
      req.on('response', (res) => {
        if (res.statusCode !== 200) failures++;
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', () => {
        failures++;
        resolve();
      });
      req.end(body);
    });
  const measured = meter();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await one(next++);
    }),
  );
  const run = measured(n, (performance.now() - t0) / 1000);
  agent.destroy();
  if (failures) throw new Error(`bare loop: ${failures} failed POSTs`);
  return run;
}

export interface WebhookBenchResult {
  /** Deliveries per second through the service (median of the repetitions). */
  service: number;
  /** Signed POSTs per second from the bare loop (median). */
  bare: number;
  /** Median of the per-repetition service / bare ratios. */
  ratio: number;
  events: number;
  /** Partners the events are spread over (each with WEBHOOK_PARTNER_CONCURRENCY slots). */
  partners: number;
  reps: Array<{
    service: number; bare: number; ratio: number;
    serviceCpuMs: number; bareCpuMs: number; serviceMachineCpuMs: number; bareMachineCpuMs: number;
  }>;
  /** Commit-to-receipt latency at BENCH_WEBHOOK_RATE events per second (absent with BENCH_WEBHOOK_RATE=0). */
  latency?: LatencyResult;
}

export async function benchWebhooks(context: { reps?: number; partners?: number } = {}): Promise<WebhookBenchResult> {
  const reps = context.reps ?? Number(process.env.BENCH_REPS ?? 3);
  const events = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 20000);
  const warmup = Number(process.env.BENCH_WEBHOOK_WARMUP ?? 5000);
  const partners = context.partners ?? Number(process.env.BENCH_WEBHOOK_PARTNERS ?? 1);
  const latencyRate = Number(process.env.BENCH_WEBHOOK_RATE ?? 1000);
  if (!Number.isInteger(latencyRate) || latencyRate < 0) throw new Error('BENCH_WEBHOOK_RATE: events per second, a whole number (0 skips the latency phase)');
  if (!Number.isInteger(partners) || partners < 1) throw new Error(`BENCH_WEBHOOK_PARTNERS: one whole number ≥ 1 when run alone (npm run bench takes a list)`);
  log(`database ${DATABASE_URL}: recreating and migrating`);
  await dropDatabase(DATABASE_URL);
  await migrate(DATABASE_URL);
  await clearRedisPrefix();
  const receiver = await startReceiver();
  const client = new Client({ connectionString: DATABASE_URL });
  await client.connect();
  let running: Running | undefined;
  try {
    const fs: Fixture[] = [];
    for (let i = 0; i < partners; i++) fs.push(await seed(client, receiver.url));
    const f = fs[0];
    const config = loadConfig({
      NODE_ENV: 'development',
      DATABASE_URL,
      REDIS_URL,
      REDIS_PREFIX,
      PORT: '0',
      ADMIN_PORT: '0',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      LOG_LEVEL: 'warn',
      // Unset: the service's default (10 of one partner in flight). With a single partner (the default
      // BENCH_WEBHOOK_PARTNERS=1) this limit, not the worker's 100, caps what is in flight; with 5 or more
      // partners the worker's concurrency does.
      ...(process.env.WEBHOOK_PARTNER_CONCURRENCY ? { WEBHOOK_PARTNER_CONCURRENCY: process.env.WEBHOOK_PARTNER_CONCURRENCY } : {}),
    });
    running = await start(config, { http: false, worker: true }, { logger: process.env.BENCH_LOGS ? undefined : false });
    log(`warm-up: ${warmup} deliveries and as many bare POSTs; then ${events} deliveries and ${events * BARE_FACTOR} bare POSTs a repetition`);
    await serviceRun(running, client, receiver.child, fs, warmup);
    await bareRun(receiver.url, f, warmup);
    const results: WebhookBenchResult['reps'] = [];
    const profiler = process.env.BENCH_WEBHOOK_PROFILE ? new Session() : undefined;
    profiler?.connect();
    await profiler?.post('Profiler.enable');
    for (let i = 0; i < reps; i++) {
      await profiler?.post('Profiler.start');
      const service = await serviceRun(running, client, receiver.child, fs, events);
      if (profiler) {
        const { profile } = await profiler.post('Profiler.stop');
        writeFileSync(process.env.BENCH_WEBHOOK_PROFILE!.replace(/(\.cpuprofile)?$/, `.${i + 1}.cpuprofile`), JSON.stringify(profile));
      }
      // The bare loop is an order of magnitude faster: more POSTs keep its timing out of the noise.
      const bare = await bareRun(receiver.url, f, events * BARE_FACTOR);
      const ratio = service.rate / bare.rate;
      results.push({
        service: Math.round(service.rate), bare: Math.round(bare.rate), ratio: Number(ratio.toFixed(3)),
        serviceCpuMs: +service.cpuMs.toFixed(3), bareCpuMs: +bare.cpuMs.toFixed(3),
        serviceMachineCpuMs: +service.machineCpuMs.toFixed(3), bareMachineCpuMs: +bare.machineCpuMs.toFixed(3),
      });
      const cpu = (r: Run) => `${r.cpuMs.toFixed(3)} ms CPU each, machine ${r.machineCpuMs.toFixed(3)}`;
      log(`rep ${i + 1}: service ${service.rate.toFixed(0)}/s (${cpu(service)}), bare ${bare.rate.toFixed(0)}/s (${cpu(bare)}), ratio ${ratio.toFixed(2)}` +
        (profiler ? ' (profiled: the service ran under the profiler, the ratio does not count)' : ''));
    }
    let latency: LatencyResult | undefined;
    if (latencyRate > 0) {
      log(`latency: ${latencyRate} events/s committed by a producer process, 2 s warm-up + ${LATENCY_SECONDS} s measured`);
      latency = await latencyRun(receiver.child, fs, latencyRate, LATENCY_SECONDS);
      log(`latency: commit to receipt p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms, max ${latency.maxMs} ms over ${latency.events} events ` +
        `(committed at ${latency.achievedRate}/s, producer lag p99 ${latency.lagP99Ms} ms, max ${latency.lagMaxMs} ms; CPU per event: producer ${latency.producerCpuMs} ms, worker ${latency.workerCpuMs} ms; goal p99 < 1000 ms at 1,000/s)${latency.missing ? `; ${latency.missing} NOT RECEIVED` : ''}`);
    }
    return {
      service: Math.round(median(results.map((r) => r.service))),
      bare: Math.round(median(results.map((r) => r.bare))),
      ratio: Number(median(results.map((r) => r.ratio)).toFixed(3)),
      events,
      partners,
      reps: results,
      latency,
    };
  } finally {
    await running?.close();
    await client.end();
    await receiver.child.stop();
    await clearRedisPrefix();
  }
}

if (require.main === module) {
  benchWebhooks()
    .then(async (r) => {
      console.log(JSON.stringify(r));
      await cleanup();
      process.exit(0);
    })
    .catch(async (e) => {
      console.error(e);
      await cleanup();
      process.exit(1);
    });
}
