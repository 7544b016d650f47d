import { Inject, Injectable } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { MicroBatch } from '../../common/micro-batch';
import { RedisConnections } from '../../common/redis/redis.module';

/**
 * A slot is leased from admission for the attempt's wait in the queue (up to this long) plus its run (the
 * poster's deadline plus WEBHOOK_STALL_MARGIN_MS for the claim; a run-on frees the slot once the POST is over,
 * before the record: DeliveryProcessor.runNext). A worker that dies mid-attempt, or
 * between admitting and queueing, loses the slot for at most that long; the stalled check or the outbox
 * re-drive sends the attempt again.
 */
const QUEUED_MS = 60_000;
/** A partner's waiting set is dropped if nothing touches it for a day (Postgres holds every due attempt). */
const WAITING_TTL_MS = 86_400_000;

// Every time in these scripts is Redis's own clock (TIME), and leases are sent as durations: the workers'
// clocks may disagree with each other and with Redis (one stepped back by NTP would otherwise write leases
// already past for the others, or drop theirs early), and the partner's limit must hold across all of them.
const REDIS_NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// Moves waiting members of one partner (slots, waiting) into its free slots, oldest first, appending them to
// `out`, and keeps both keys' expiry: the slots key lives as long as its newest lease. Needs `now`, `limit`
// and `expiry` (the lease of members admitted now) in scope.
const FILL = `
  local function fill(slots, waiting, out)
    local free = limit - redis.call('ZCARD', slots)
    if free > 0 then
      local popped = redis.call('ZPOPMIN', waiting, free)
      for i = 1, #popped, 2 do
        redis.call('ZADD', slots, expiry, popped[i])
        out[#out + 1] = popped[i]
      end
    end
    local newest = redis.call('ZRANGE', slots, -1, -1, 'WITHSCORES')
    if newest[2] then redis.call('PEXPIREAT', slots, newest[2]) end
    redis.call('PEXPIRE', waiting, ${WAITING_TTL_MS})
  end`;

// Whether Redis still holds the gate's state (KNOWN below): a key set when the slots were seeded from Postgres,
// gone with everything else when Redis loses its data. A partner's slots key alone cannot tell: it is absent
// too whenever the partner has nothing in flight. Needs KEYS[3] to be that key.
const IF_UNKNOWN_RETURN = (reply: string) => `if redis.call('EXISTS', KEYS[3]) == 0 then return ${reply} end`;

// KEYS[1]: the partner's slots, a sorted set of members holding a slot, scored by their lease's expiry (ms).
// KEYS[2]: the partner's waiting members, scored by when they first asked (oldest admitted first).
// KEYS[3]: the gate's KNOWN key; without it nothing is admitted and the reply is { -1 } (seed first).
// ARGV: limit, lease length (ms) for members admitted now, '1' to hand back members that hold a slot already
// (while the partner holds no more slots than its limit; past it the member waits instead) ('0' to leave them:
// a duplicate relay), then the members asking for a slot. Expired leases (a worker that
// died) are dropped before counting. Returns the number of members newly waiting or handed back, then the
// members to queue now (handed back first, then admitted).
const ADMIT = `
  ${IF_UNKNOWN_RETURN('{ -1 }')}
  ${REDIS_NOW}
  local limit, expiry = tonumber(ARGV[1]), now + tonumber(ARGV[2])
  ${FILL}
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local added, out = 0, { 0 }
  for i = 4, #ARGV do
    if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
      added = added + redis.call('ZADD', KEYS[2], 'NX', now, ARGV[i])
    elseif ARGV[3] == '1' then
      if redis.call('ZCARD', KEYS[1]) > limit then
        -- More slots held than the limit (a seeding gives each attempt claimed within its lease one, see SEED):
        -- this member gives its slot up and waits at the front of the line, rather than run beside all the others.
        redis.call('ZREM', KEYS[1], ARGV[i])
        added = added + redis.call('ZADD', KEYS[2], 'NX', 0, ARGV[i])
      else
        redis.call('ZADD', KEYS[1], expiry, ARGV[i])
        added = added + 1
        out[#out + 1] = ARGV[i]
      end
    end
  end
  out[1] = added
  fill(KEYS[1], KEYS[2], out)
  return out`;

// Frees many slots at once, in order, as release() one by one would. KEYS[1]: the gate's KNOWN key, KEYS[2]: the
// members released while it was missing (RELEASED below), then each release's partner's slots and waiting keys
// in pairs; ARGV the limit, the admission lease (ms), then each release's member. Returns, per release, the
// members it admitted. With the state lost the waiting sets are gone too, and nothing joins them until it is
// seeded, so a release then admits nothing; but its member is noted in RELEASED, so that a seeding which read
// it 'delivering' in Postgres before it ended does not give it a slot nobody would free (SEED). One call for the
// attempts that ended in one turn of the worker's event loop, whatever their partners: script calls per delivery
// fell from 1.1 to 0.19, and Redis's CPU by a sixth (bench:webhook-wire, 10 partners, 2026-11-27). Keys of many
// partners in one call: standalone Redis, as DESIGN has it (on Redis Cluster they would be refused, CROSSSLOT,
// as ADMIT's keys already would be).
const RELEASE = `
  ${REDIS_NOW}
  local limit, expiry = tonumber(ARGV[1]), now + tonumber(ARGV[2])
  ${FILL}
  local unknown = redis.call('EXISTS', KEYS[1]) == 0
  local out = {}
  for i = 1, (#KEYS - 2) / 2 do
    local slots, waiting = KEYS[2 * i + 1], KEYS[2 * i + 2]
    if unknown then
      redis.call('SADD', KEYS[2], ARGV[i + 2])
      redis.call('PEXPIRE', KEYS[2], ${WAITING_TTL_MS})
    end
    redis.call('ZREM', slots, ARGV[i + 2])
    redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
    out[i] = {}
    fill(slots, waiting, out[i])
  end
  return out`;

// KEYS[1]: the partner's slots, KEYS[2]: its waiting members, KEYS[3]: the gate's KNOWN key (without it: -1,
// seed first). ARGV: limit, the member, its running lease's length (ms). A job about to run its attempt: it runs
// if its member still holds a slot (renewed for the run), or if a slot is free (its admission lease ran out
// while it waited in the queue, say with every worker down); otherwise the member goes back to the front of the
// waiting line and the job ends without running, so the limit holds however long jobs wait. Returns 1 to run, 0
// not to.
const START = `
  ${IF_UNKNOWN_RETURN('-1')}
  ${REDIS_NOW}
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if redis.call('ZSCORE', KEYS[1], ARGV[2]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
    local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
    redis.call('PEXPIREAT', KEYS[1], newest[2])
    return 1
  end
  redis.call('ZADD', KEYS[2], 0, ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ${WAITING_TTL_MS})
  return 0`;

// Gives the attempts that Postgres holds claimed and that may still be in flight their slots back, after Redis
// lost the gate's state, and marks the state known; nothing if another worker did so first. KEYS[1]: the KNOWN
// key, KEYS[2]: RELEASED, then each attempt's partner's slots key; ARGV: each attempt's member and what is left
// of its running lease (ms), in pairs, in the order of KEYS from KEYS[3]. A seeded slot ends when the attempt's
// deadline has surely passed (its claim plus the poster's deadline plus WEBHOOK_STALL_MARGIN_MS): the worker
// running it frees it sooner when the attempt ends. An attempt claimed longer ago is not in flight (ClaimedAttempts
// leaves it out): it gets no slot, and the re-drive, finding it stalled, puts it in its partner's line. One whose
// POST was over and its slot freed, with its record still to come, is seeded too: nobody frees that slot, and
// the end of its lease does. A member released since the state was lost (in RELEASED) ended after the read of
// Postgres: it gets no slot, since its release has come and gone. A partner may hold more than its limit this
// way (since slots are freed before the record, DeliveryProcessor.runNext, every attempt sent whose record
// Postgres refused is such a member): it then admits nothing until enough leases end. The re-drive finds such a
// member stalled only as its lease ends; a hand-back (ADMIT) that comes first runs it only while the partner
// holds no more than its limit (handed back each in its slot, a dozen ran at once against a limit of 3, when a
// seeding gave every attempt a whole lease from the seeding: attempts long over also held their slots that long).
const SEED = `
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
  ${REDIS_NOW}
  for i = 3, #KEYS do
    local member, left = ARGV[2 * (i - 3) + 1], tonumber(ARGV[2 * (i - 3) + 2])
    if redis.call('SISMEMBER', KEYS[2], member) == 0 and left > 0 then
      redis.call('ZADD', KEYS[i], 'NX', now + left, member)
      local newest = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
      redis.call('PEXPIREAT', KEYS[i], newest[2])
    end
  end
  redis.call('DEL', KEYS[2])
  redis.call('SET', KEYS[1], now)
  return 1`;

/**
 * The attempts claimed in Postgres and not recorded yet ('delivering') that may be in flight, as gate members:
 * claimed less than `leaseMs` ago (an attempt's longest run), each with what is left of that (ms).
 */
export abstract class ClaimedAttempts {
  abstract list(leaseMs: number): Promise<Array<{ partnerId: string; member: string; leaseLeftMs: number }>>;
}

/** What admit() answers: members that now hold a slot (queue their attempt), and how many were new. */
export interface Admission {
  admitted: string[];
  added: number;
}

/**
 * At most WEBHOOK_PARTNER_CONCURRENCY attempts of one partner in flight across every worker (DESIGN §7), by
 * admission: an attempt is queued only once it holds one of its partner's slots; the others wait in the
 * partner's waiting set in Redis, in order, and each attempt that finishes admits the next. A partner whose
 * endpoint hangs therefore holds its slots and nothing else: its waiting attempts are not jobs, spend no
 * attempt and cost the workers nothing until admitted. Members are opaque strings (the delivery job ids).
 */
@Injectable()
export class PartnerGate {
  private readonly commands: Redis & {
    prsGateAdmit(slots: string, waiting: string, known: string, ...args: Array<string | number>): Promise<[number, ...string[]]>;
    prsGateStart(slots: string, waiting: string, known: string, limit: number, member: string, leaseMs: number): Promise<number>;
    prsGateSeed(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
    prsGateRelease(numberOfKeys: number, ...args: Array<string | number>): Promise<string[][]>;
  };
  /** Slots freed during one turn of the event loop are freed by one script call (see RELEASE). */
  private readonly releases = new MicroBatch<{ partnerId: string; member: string }, string[]>((xs) => this.releaseMany(xs));
  /** The seeding under way in this process, which every admission and start that found the state unknown waits for. */
  private seeding: Promise<void> | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly redis: RedisConnections,
    private readonly claimed: ClaimedAttempts,
  ) {
    // EVALSHA of scripts loaded once, not the script's text on every call.
    redis.main.defineCommand('prsGateAdmit', { numberOfKeys: 3, lua: ADMIT });
    redis.main.defineCommand('prsGateStart', { numberOfKeys: 3, lua: START });
    // Their number of keys is given on each call (two per release; one per attempt seeded), plus two.
    redis.main.defineCommand('prsGateRelease', { lua: RELEASE });
    redis.main.defineCommand('prsGateSeed', { lua: SEED });
    this.commands = redis.main as typeof this.commands;
  }

  /** Adds `members` to the partner's waiting set (those not waiting or running yet), and admits as many as slots are free. */
  admit(partnerId: string, members: readonly string[]): Promise<Admission> {
    return this.run(partnerId, false, members);
  }

  /**
   * As admit(), but a member that holds a slot already is handed back to be queued again, keeping its slot:
   * for the outbox re-drive, for attempts claimed longer ago than any attempt takes, so a slot they hold
   * belonged to a worker that died. Never for an attempt merely overdue: it may hold a slot because a live
   * job took it to run on (DeliveryProcessor.runNext) and has not claimed it yet. While the partner holds more
   * slots than its limit (a seeding after Redis lost its data: SEED), the member gives its slot up and waits
   * at the front of the line instead.
   */
  readmit(partnerId: string, members: readonly string[]): Promise<Admission> {
    return this.run(partnerId, true, members);
  }

  /**
   * Frees `member`'s slot, and admits the partner's next waiting members into the free slots: those members,
   * which hold a slot now (queue their attempts). Releases asked in one turn of the event loop share one
   * script call (RELEASE), and so its failure: each of them rejects. A failure after Redis ran the script (the
   * reply lost to a timeout or a dropped connection) leaves the members it admitted holding slots with no job,
   * now of every partner in the batch rather than one; they are sent again by the outbox re-drive once their
   * admission lease runs out (about a minute), as one lost admission always was.
   */
  release(partnerId: string, member: string): Promise<string[]> {
    return this.releases.submit({ partnerId, member });
  }

  /**
   * For a job about to run `member`'s attempt: true when it holds a slot for the run (its own, renewed, or a
   * free one); false when its lease ran out and the partner's slots are all taken: it is back at the front of
   * the waiting line, and the job must not run it.
   */
  async start(partnerId: string, member: string): Promise<boolean> {
    const reply = await this.known(() => this.commands.prsGateStart(
      this.key(partnerId, 'slots'), this.key(partnerId, 'waiting'), this.knownKey(),
      this.config.webhookPartnerConcurrency, member, this.runningLeaseMs(),
    ), (r) => r === -1);
    return reply === 1;
  }

  /** The partner's members waiting for a slot, and those holding one (for operators and tests). */
  async state(partnerId: string): Promise<{ waiting: number; running: number }> {
    const [seconds, micros] = await this.redis.main.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const [waiting, running] = await Promise.all([
      this.redis.main.zcard(this.key(partnerId, 'waiting')),
      this.redis.main.zcount(this.key(partnerId, 'slots'), now + 1, '+inf'),
    ]);
    return { waiting, running };
  }

  private async run(partnerId: string, requeue: boolean, members: readonly string[]): Promise<Admission> {
    const [added, ...admitted] = await this.known(() => this.commands.prsGateAdmit(
      this.key(partnerId, 'slots'), this.key(partnerId, 'waiting'), this.knownKey(),
      this.config.webhookPartnerConcurrency, this.admissionLeaseMs(), requeue ? '1' : '0', ...members,
    ), (r) => r[0] === -1);
    return { added, admitted };
  }

  /**
   * Runs a gate script; when it found the gate's state unknown (Redis lost its data, or this is its first use),
   * seeds the slots from Postgres and runs it again. Otherwise the attempts still in flight, which Redis forgot,
   * would not count, and a whole limit more would be admitted beside them (DESIGN §7). Costs the hot path
   * nothing but the scripts' EXISTS: Postgres is read once per loss of Redis's data, by each worker that finds it.
   */
  private async known<T>(script: () => Promise<T>, unknown: (reply: T) => boolean): Promise<T> {
    for (let tries = 1; ; tries++) {
      const reply = await script();
      if (!unknown(reply)) return reply;
      if (tries === 3) throw new Error('partner gate: its state in Redis was lost again while being restored');
      this.seeding ??= this.seed().finally(() => {
        this.seeding = null;
      });
      await this.seeding;
    }
  }

  private async seed(): Promise<void> {
    const claimed = await this.claimed.list(this.runningLeaseMs());
    await this.commands.prsGateSeed(
      2 + claimed.length, this.knownKey(), this.releasedKey(), ...claimed.map((c) => this.key(c.partnerId, 'slots')),
      ...claimed.flatMap((c) => [c.member, c.leaseLeftMs]),
    );
  }

  private releaseMany(xs: Array<{ partnerId: string; member: string }>): Promise<string[][]> {
    return this.commands.prsGateRelease(
      2 + 2 * xs.length,
      this.knownKey(),
      this.releasedKey(),
      ...xs.flatMap((x) => [this.key(x.partnerId, 'slots'), this.key(x.partnerId, 'waiting')]),
      this.config.webhookPartnerConcurrency, this.admissionLeaseMs(),
      ...xs.map((x) => x.member),
    );
  }

  private admissionLeaseMs(): number {
    return QUEUED_MS + this.runningLeaseMs();
  }

  private runningLeaseMs(): number {
    return this.config.webhookTimeoutMs + this.config.webhookStallMarginMs;
  }

  private knownKey(): string {
    return `${this.config.redisPrefix}:webhook-gate-known`;
  }

  /** The members released while the state was unknown, which a seeding under way must not give a slot (SEED). */
  private releasedKey(): string {
    return `${this.config.redisPrefix}:webhook-gate-released`;
  }

  private key(partnerId: string, what: 'slots' | 'waiting'): string {
    return `${this.config.redisPrefix}:webhook-${what}:${partnerId}`;
  }
}
