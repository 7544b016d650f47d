import * as http from 'node:http';
import * as https from 'node:https';
import type { SmsConfig } from '../../config/config';
import type { SendResult } from './notification';

const MAX_BODY_CHARS = 300;

/**
 * SMS through a Twilio-compatible REST API (DESIGN §6): a form POST of To, From and Body to
 * {SMS_API_URL}/2010-04-01/Accounts/{sid}/Messages.json with basic auth. A 4xx other than 429 is refused
 * for good; 429, 503 and other 5xx are tried again, and so is a failure before the request was written out
 * (no connection, a refused one); 500, 502 and 504 are in doubt (see outcome). Once the status line came, the
 * status decides, even when the body after it is cut or slow. A failure after it was written and before any
 * status (no answer within the timeout or the send's deadline, a connection dropped before the answer) is in doubt: the provider may have sent the message, and
 * Twilio-style APIs ignore the idempotency key, so it is never sent again (at most one message, as for email).
 * node:http rather than fetch, which cannot tell the two apart: with fetch, a provider slower than the timeout
 * got the same receipt once per retry (7 in 12 s).
 */
export class SmsClient {
  constructor(private readonly config: SmsConfig, private readonly timeoutMs: number) {}

  /** One call, cut at timeoutMs or at the send's deadline, whichever comes first. */
  send(m: { to: string; body: string; messageId: string }, deadline: AbortSignal): Promise<SendResult> {
    const url = new URL(`${this.config.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(this.config.accountSid)}/Messages.json`);
    const auth = Buffer.from(`${this.config.accountSid}:${this.config.authToken}`).toString('base64');
    const form = new URLSearchParams({ To: m.to, From: this.config.from, Body: m.body }).toString();
    return new Promise<SendResult>((resolve) => {
      let written = false;
      let settled = false;
      // The answer's status, once its status line came, and as much of its body as was read: the provider has
      // decided by then, so a body cut or slow after it changes nothing (read as in doubt, a 503's receipt would
      // never be sent and a 201's SMS would be recorded as failed).
      let status: number | null = null;
      let text = '';
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      const onDeadline = () => req.destroy(new Error("the send's deadline passed"));
      const finish = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        deadline.removeEventListener('abort', onDeadline);
        resolve(r);
      };
      const failed = (e: Error, when: string) =>
        finish(status !== null
          ? outcome(status, `${text.slice(0, MAX_BODY_CHARS)} (answer cut: ${describe(e)})`)
          : written
            ? { kind: 'in_doubt', error: `in doubt: ${describe(e)} ${when}; not resent, to avoid a duplicate` }
            : { kind: 'transient', error: describe(e) });
      const req = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        // A connection of its own, never one kept from an earlier SMS (Node's global agent keeps them alive): a
        // provider that closed it as idle never reads a request written into it, and the reset after the write
        // would read as in doubt, the receipt never sent.
        agent: false,
        headers: {
          authorization: `Basic ${auth}`,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(form),
          // Providers that honour it drop a repeated send; the row's Message-ID is stable across attempts.
          'idempotency-key': m.messageId,
        },
      });
      req.on('finish', () => (written = true));
      req.on('error', (e) => failed(e, 'after the request went out'));
      req.on('response', (res) => {
        status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < MAX_BODY_CHARS) text += chunk;
        });
        res.on('error', (e) => failed(e, 'while the answer was read'));
        res.on('end', () => finish(outcome(res.statusCode ?? 0, text.slice(0, MAX_BODY_CHARS))));
      });
      if (deadline.aborted) return onDeadline();
      deadline.addEventListener('abort', onDeadline, { once: true });
      req.end(form);
    });
  }
}

/**
 * 500, 502 and 504 say the provider, or a gateway that forwarded the request to it, failed while handling
 * it: the message may have gone out, so it is in doubt, never resent. 429 and 503 say it was not taken:
 * tried again, as is any other 5xx.
 */
const MAY_HAVE_SENT = new Set([500, 502, 504]);

function outcome(status: number, text: string): SendResult {
  if (status >= 200 && status < 300) return { kind: 'sent', response: sidOf(text) ?? `HTTP ${status}` };
  const error = `HTTP ${status}: ${text}`;
  if (status >= 400 && status < 500 && status !== 429) return { kind: 'refused', error };
  if (MAY_HAVE_SENT.has(status)) return { kind: 'in_doubt', error: `in doubt: ${error}; not resent, to avoid a duplicate` };
  return { kind: 'transient', error };
}

function describe(e: Error): string {
  const code = (e as NodeJS.ErrnoException).code;
  return code && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
}

function sidOf(body: string): string | null {
  try {
    const sid = (JSON.parse(body) as { sid?: unknown }).sid;
    return typeof sid === 'string' ? sid : null;
  } catch {
    return null;
  }
}
