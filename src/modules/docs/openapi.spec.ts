import { buildOpenApi } from './openapi';

/** The webhook description states the retries the deployment makes (WEBHOOK_* settings), not a fixed list. */
describe('buildOpenApi: webhook retries', () => {
  const description = (webhooks: { delaysMs: number[]; maxAttempts: number; timeoutMs: number }) =>
    (buildOpenApi({ publicUrl: 'http://localhost:3000', keyPrefix: 'prs', webhooks }).webhooks!['payment.proof_verified'] as any).post.description as string;

  it.each([
    [
      'the defaults: five waits, never the 24 h one',
      { delaysMs: [60000, 300000, 1800000, 7200000, 21600000, 86400000], maxAttempts: 6, timeoutMs: 8000 },
      '2xx within 8 s: delivered. 4xx except 429: abandoned. 429, 5xx, 3xx, timeout or network error: retried, 6 attempts in all, after waits of 1 min, 5 min, 30 min, 2 h and 6 h (the last attempt 8 h 36 min after the first), then abandoned.',
    ],
    [
      'more attempts than delays: the last delay repeats',
      { delaysMs: [60000, 86400000], maxAttempts: 4, timeoutMs: 2500 },
      '2xx within 2 s 500 ms: delivered. 4xx except 429: abandoned. 429, 5xx, 3xx, timeout or network error: retried, 4 attempts in all, after waits of 1 min, 24 h and 24 h (the last attempt 48 h 1 min after the first), then abandoned.',
    ],
    [
      'two attempts',
      { delaysMs: [200, 400], maxAttempts: 2, timeoutMs: 2000 },
      'retried, 2 attempts in all, after waits of 200 ms (the last attempt 200 ms after the first), then abandoned.',
    ],
    ['one attempt', { delaysMs: [60000], maxAttempts: 1, timeoutMs: 8000 }, '429, 5xx, 3xx, timeout or network error: not retried (one attempt).'],
  ])('%s', (_label, webhooks, expected) => {
    expect(description(webhooks)).toContain(expected);
  });
});

describe('buildOpenApi: webhook response', () => {
  it("states the deployment's attempt time-out, not a fixed 8 seconds", () => {
    const doc = buildOpenApi({ publicUrl: 'http://localhost:3000', keyPrefix: 'prs', webhooks: { delaysMs: [60000], maxAttempts: 6, timeoutMs: 2500 } });
    for (const event of ['payment.proof_attached', 'payment.proof_verified']) {
      const ok = (doc.webhooks![event] as any).post.responses['200'].description as string;
      expect(ok).toContain('within 2 s 500 ms');
      expect(ok).not.toContain('8 seconds');
    }
  });
});
