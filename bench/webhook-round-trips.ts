/**
 * Where a webhook delivery's round trips go (issue 14 item 3): runs bench/webhooks.ts (BENCH_REPS, default 1;
 * BENCH_WEBHOOK_EVENTS and BENCH_WEBHOOK_WARMUP as there) with the pg client, ioredis, MicroBatch and the repository's steps counted in this process (the
 * worker runs here), and prints per delivered event: Postgres statements by kind, Redis commands by name, and
 * the sizes of the claim and record micro-batches. Counting, not timing: the figures do not depend on load.
 *   node -r @swc-node/register bench/webhook-round-trips.ts
 */
import Redis from 'ioredis';
import { Client } from 'pg';
import { MicroBatch } from '../src/common/micro-batch';
import { WebhookEventsRepository } from '../src/modules/webhooks/webhook-events.repository';
import { benchWebhooks } from './webhooks';
import { cleanup } from './children';

const pgStatements = new Map<string, number>();
const redisCommands = new Map<string, number>();
const batches = new Map<string, number[]>();
let counting = false;
const add = (m: Map<string, number>, k: string) => counting && m.set(k, (m.get(k) ?? 0) + 1);

function statementKind(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (/FULL JOIN claimed/.test(t)) return 'record + claim batch (one slot ends, the next begins)';
  if (/webhook_attempts \(event_id/.test(t)) return 'record batch (attempt rows + event states)';
  if (/SET state = 'delivering'/.test(t)) return 'claim batch (events + endpoint + series)';
  if (/webhook_events/.test(t) && /count\(\*\)/.test(t)) return '(bench watcher)';
  return t.slice(0, 60);
}

const query = Client.prototype.query as (...a: unknown[]) => unknown;
Client.prototype.query = function (this: Client, ...args: unknown[]) {
  const q = args[0] as string | { text?: string };
  const text = typeof q === 'string' ? q : q?.text ?? '';
  // The bench's own client counts events; the worker's pool clients are the ones that matter.
  if (!(this as unknown as { _benchClient?: boolean })._benchClient) add(pgStatements, statementKind(text));
  return query.apply(this, args);
} as typeof Client.prototype.query;

const send = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, cmd: { name: string; args: unknown[] }, ...rest: unknown[]) {
  const name = cmd.name === 'evalsha' || cmd.name === 'eval' ? `${cmd.name}` : cmd.name;
  add(redisCommands, name);
  return (send as (...a: unknown[]) => unknown).call(this, cmd, ...rest);
} as typeof Redis.prototype.sendCommand;

const flush = (MicroBatch.prototype as unknown as { flush(): void }).flush;
(MicroBatch.prototype as unknown as { flush(): void }).flush = function (this: { pending: unknown[]; run: () => unknown }) {
  const run = String(this.run);
  const label = run.includes('releaseMany') ? 'gate release' : 'other';
  if (counting && this.pending.length) batches.set(label, [...(batches.get(label) ?? []), this.pending.length]);
  flush.call(this);
};

// The claims and records of one turn (WebhookEventsRepository.steps): one statement, or one of each kind.
type Steps = { pending: { claims: unknown[]; records: unknown[] }; steps(): Promise<void> };
const steps = (WebhookEventsRepository.prototype as unknown as Steps).steps;
(WebhookEventsRepository.prototype as unknown as Steps).steps = function (this: Steps) {
  const { claims, records } = this.pending;
  if (counting && claims.length) batches.set('claim', [...(batches.get('claim') ?? []), claims.length]);
  if (counting && records.length) batches.set('record', [...(batches.get('record') ?? []), records.length]);
  return steps.call(this);
};

async function main(): Promise<void> {
  // Only the throughput phase (whatever BENCH_WEBHOOK_RATE says): its deliveries are what the counts are divided by.
  process.env.BENCH_WEBHOOK_RATE = '0';
  counting = true;
  const r = await benchWebhooks({ reps: Number(process.env.BENCH_REPS ?? 1) });
  counting = false;
  // Warm-up plus every repetition's events went through the worker.
  const delivered = Number(process.env.BENCH_WEBHOOK_WARMUP ?? 5000) + r.events * r.reps.length;
  const per = (m: Map<string, number>) =>
    Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, +(v / delivered).toFixed(3)]));
  const sizes = Object.fromEntries([...batches].map(([k, xs]) => {
    const s = [...xs].sort((a, b) => a - b);
    return [k, { batches: xs.length, mean: +(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1), p50: s[s.length >> 1], max: s[s.length - 1] }];
  }));
  console.log(JSON.stringify({ delivered, ratio: r.ratio, service: r.service, bare: r.bare, postgresPerDelivery: per(pgStatements), redisPerDelivery: per(redisCommands), microBatches: sizes }, null, 2));
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    process.exit(process.exitCode ?? 0);
  });
