import type { PostOutcome } from './webhook-poster';

/** What an attempt leaves the delivery in (spec §6.5); also the `outcome` column of webhook_attempts. */
export const ATTEMPT_OUTCOMES = ['delivered', 'retry', 'abandoned'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

export type NextStep =
  | { outcome: 'delivered' }
  | { outcome: 'abandoned' }
  | { outcome: 'retry'; delayMs: number };

export interface RetrySchedule {
  /** WEBHOOK_RETRY_DELAYS_MS: the wait after attempt 1, 2, …; the last value repeats. */
  delaysMs: number[];
  /** WEBHOOK_MAX_ATTEMPTS: attempts of one series before the delivery is abandoned. */
  maxAttempts: number;
}

/** The wait after the n-th attempt of a series (n ≥ 1); past the end of the list the last value repeats. */
export function retryDelayMs(n: number, delaysMs: number[]): number {
  return delaysMs[Math.min(Math.max(n, 1), delaysMs.length) - 1];
}

/**
 * Spec §6.5 as one pure rule: 2xx delivered; 4xx except 429 abandoned at once; everything else retried after
 * the configured delay until the series has used its attempts. `attemptInSeries` counts from 1; a manual
 * redelivery starts a new series (see DeliveryService).
 */
export function nextStep(post: PostOutcome, attemptInSeries: number, schedule: RetrySchedule): NextStep {
  switch (classifyOutcome(post)) {
    case 'delivered':
      return { outcome: 'delivered' };
    case 'abandoned':
      return { outcome: 'abandoned' };
    case 'retry':
      if (attemptInSeries >= schedule.maxAttempts) return { outcome: 'abandoned' };
      return { outcome: 'retry', delayMs: retryDelayMs(attemptInSeries, schedule.delaysMs) };
  }
}

/**
 * Spec §6.5 plus DESIGN §3: 2xx delivered; 4xx except 429 abandoned at once; 429, 5xx, 3xx (redirects are not
 * followed), time-outs and network errors retried.
 */
export function classifyOutcome(o: PostOutcome): AttemptOutcome {
  switch (o.errorClass) {
    case 'timeout':
    case 'network':
    case 'redirect':
      return 'retry';
    case 'forbidden_address':
      // The URL passed the guard when it was saved, so now resolving to a forbidden address is a DNS or
      // configuration problem on the partner's side (or a rebinding attempt, which gains nothing by retrying:
      // every attempt is checked again). Retrying with backoff gives the partner time to fix DNS, as for a
      // network error; abandoning would drop the event for a transient misconfiguration.
      return 'retry';
    case null:
      break;
  }
  const s = o.statusCode;
  if (s === null) return 'retry';
  if (s >= 200 && s < 300) return 'delivered';
  if (s === 429) return 'retry';
  if (s >= 400 && s < 500) return 'abandoned';
  return 'retry'; // 5xx, 3xx, and anything non-standard
}
