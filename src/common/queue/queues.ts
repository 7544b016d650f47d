/**
 * Every BullMQ queue of the service and what its jobs carry. Jobs carry ids only and re-read state
 * (STYLE rule 7); job ids are deterministic wherever a duplicate would hurt.
 */
export const QUEUES = {
  /** Check a submitted transaction hash against the pay rule. */
  verification: 'verification',
  /** Store the expiries of the requests lapsed by a due moment (one job per second of expires_at). */
  expiry: 'expiry',
  /** One webhook delivery attempt. */
  webhooks: 'webhooks',
  /** Repeating singleton work of the webhooks module: the outbox re-drive. */
  maintenance: 'maintenance',
  /** Repeating singleton work of the chain side: the chain scan and the expiry sweep. */
  scheduled: 'scheduled',
  /** The repeating automatic rate refresh. */
  rates: 'rates',
  /** The repeating re-read of verified claims until they are settled (DESIGN §7 "Finality"). */
  finality: 'finality',
  /** The repeating plan scheduler: charges of recurring plans as they fall due (DESIGN §5). */
  plans: 'plans',
  /** One notification attempt (email or SMS), and the notifications outbox re-drive. */
  notifications: 'notifications',
  /** Repeating work of the dashboard module: the sweep of ended sessions and expired nonces. */
  dashboard: 'dashboard',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];
export const ALL_QUEUES: QueueName[] = Object.values(QUEUES);

export interface VerificationJob {
  requestId: string;
  txHash: string;
  /**
   * Written by the processor while the job waits (ids stay the job's identity; this is only its place in the
   * wait): `block` — waiting for a new block of `mode`'s chain past `tip` (the head watcher wakes only these);
   * `backoff` — the hash is unknown to the node since `since`, looked up again after doubling delays.
   */
  wait?: { for: 'block'; mode: 'test' | 'live'; tip: number } | { for: 'backoff'; since: number; tries: number };
  /**
   * Epoch ms the wait for an unknown hash counts from, when not from the job's first look: the hash's
   * attachment, for a job queued again after Redis lost the first (its give-up falls where the first's would).
   * Read at the first look only: dropped once the job waits, so a transaction seen and then lost again (dropped
   * from the mempool, reorged away) is waited for a whole give-up from then.
   */
  since?: number;
}

/**
 * `dueAt` (epoch ms): store every expiry lapsed by then. `requestId`: one request's expiry, as queued before
 * the jobs were per due moment (2026-11-27); still run.
 */
export type ExpiryJob = { dueAt: number } | { requestId: string };

export const EXPIRY_JOBS = {
  due: 'expire-due',
  /** A job of one request (queued by an older build). */
  one: 'expire',
} as const;

export interface WebhookJob {
  eventId: string;
  attempt: number;
  /** The event's partner, for the per-partner delivery slots; absent in jobs queued before it was added. */
  partnerId?: string;
  /** Queued by the partner's gate, holding a slot; absent in jobs queued before the gate (they run ungated). */
  admitted?: boolean;
}

export interface NotificationJob {
  notificationId: string;
  attempt: number;
}

export const NOTIFICATION_JOBS = {
  send: 'send',
  redrive: 'notifications-redrive',
} as const;

export const MAINTENANCE_JOBS = {
  outboxRedrive: 'outbox-redrive',
} as const;

export const SCHEDULED_JOBS = {
  chainScan: 'chain-scan',
  expirySweep: 'expiry-sweep',
} as const;

export const DASHBOARD_JOBS = {
  sweep: 'dashboard-sweep',
} as const;

export const FINALITY_JOBS = {
  settle: 'settle-claims',
} as const;

export const PLAN_JOBS = {
  charge: 'plan-charges',
} as const;
