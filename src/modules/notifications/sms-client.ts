import type { SmsConfig } from '../../config/config';
import type { SendResult } from './notification';

/**
 * SMS through a Twilio-compatible REST API (DESIGN §6): a form POST of To, From and Body to
 * {SMS_API_URL}/2010-04-01/Accounts/{sid}/Messages.json with basic auth. A 4xx other than 429 is refused
 * for good; 5xx, 429 and connection failures are tried again.
 */
export class SmsClient {
  constructor(private readonly config: SmsConfig, private readonly timeoutMs: number) {}

  /** One call, cut at timeoutMs or at the send's deadline, whichever comes first. */
  async send(m: { to: string; body: string; messageId: string }, deadline: AbortSignal): Promise<SendResult> {
    const url = `${this.config.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(this.config.accountSid)}/Messages.json`;
    const auth = Buffer.from(`${this.config.accountSid}:${this.config.authToken}`).toString('base64');
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Basic ${auth}`,
          'content-type': 'application/x-www-form-urlencoded',
          // Providers that honour it drop a repeated send; the row's Message-ID is stable across attempts.
          'idempotency-key': m.messageId,
        },
        body: new URLSearchParams({ To: m.to, From: this.config.from, Body: m.body }).toString(),
        signal: AbortSignal.any([AbortSignal.timeout(this.timeoutMs), deadline]),
        redirect: 'manual',
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause;
      return { kind: 'transient', error: `${cause?.code ?? (e as Error).name}: ${(e as Error).message}` };
    }
    const text = (await res.text().catch(() => '')).slice(0, 300);
    if (res.status >= 200 && res.status < 300) return { kind: 'sent', response: sidOf(text) ?? `HTTP ${res.status}` };
    const error = `HTTP ${res.status}: ${text}`;
    if (res.status >= 400 && res.status < 500 && res.status !== 429) return { kind: 'refused', error };
    return { kind: 'transient', error };
  }
}

function sidOf(body: string): string | null {
  try {
    const sid = (JSON.parse(body) as { sid?: unknown }).sid;
    return typeof sid === 'string' ? sid : null;
  } catch {
    return null;
  }
}
