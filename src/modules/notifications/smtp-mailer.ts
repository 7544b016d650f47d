import { Transform } from 'node:stream';
import nodemailer, { type Transporter } from 'nodemailer';
import type { SendResult } from './notification';
import type { EmailContent } from './templates';

export interface OutgoingEmail extends EmailContent {
  to: string;
  messageId: string;
}

/**
 * Email over SMTP_URL (DESIGN §6, §8): `smtp://` upgrades with STARTTLS when the server offers it and stays
 * plain otherwise; `smtps://` is TLS from the first byte. One pooled transport per process.
 *
 * A failure after the connection read the whole message is in doubt, never transient: the server may have
 * taken it and its 250 come late (RFC 5321 §4.5.3.2.6 gives that reply 10 minutes, longer than our timeout)
 * or been lost, and a retry would be a second copy (RFC 1047). Before that, the server cannot have a message
 * (nothing counts before the final dot, which follows the last byte), so the failure is safe to retry.
 */
export class SmtpMailer {
  private readonly transport: Transporter;
  /** Message-IDs of sends in flight whose whole message the SMTP connection has read. */
  private readonly handedOver = new Set<string>();

  constructor(smtpUrl: string, private readonly from: string, timeoutMs: number) {
    const url = new URL(smtpUrl);
    const secure = url.protocol === 'smtps:';
    this.transport = nodemailer.createTransport({
      host: url.hostname,
      port: Number(url.port || (secure ? 465 : 587)),
      secure,
      auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
      pool: true,
      maxConnections: 5,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
    });
    // The last stage of each message's stream, which the connection reads to send DATA.
    this.transport.use('stream', (mail, done) => {
      const id = mail.data.messageId;
      if (id) mail.message.transform(() => new Transform({ transform: (chunk, _enc, cb) => cb(null, chunk), flush: (cb) => (this.handedOver.add(id), cb()) }));
      done();
    });
  }

  async send(m: OutgoingEmail): Promise<SendResult> {
    this.handedOver.delete(m.messageId);
    try {
      const info = await this.transport.sendMail({
        from: this.from,
        to: m.to,
        subject: m.subject,
        text: m.text,
        html: m.html,
        // The same Message-ID on every attempt: a copy that did get through is recognised as the same message.
        messageId: m.messageId,
      });
      if ((info.rejected ?? []).length > 0) return { kind: 'refused', error: `recipient refused: ${info.response}` };
      return { kind: 'sent', response: info.response ?? null };
    } catch (e) {
      const result = classifySmtpError(e as SmtpError);
      if (result.kind !== 'transient' || !this.handedOver.has(m.messageId)) return result;
      return { kind: 'in_doubt', error: `in doubt: ${result.error} after the whole message was handed to the server; not resent, to avoid a duplicate` };
    } finally {
      this.handedOver.delete(m.messageId);
    }
  }

  close(): void {
    this.transport.close();
  }
}

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
}

/** A 5xx reply or an address the server can never take → refused for good; 4xx, connection and timeouts → again later. */
export function classifySmtpError(e: SmtpError): SendResult {
  const error = `${e.code ?? 'error'}: ${e.response ?? e.message}`;
  if (e.responseCode !== undefined && e.responseCode >= 500) return { kind: 'refused', error };
  if (e.code === 'EENVELOPE' && e.responseCode === undefined) return { kind: 'refused', error };
  return { kind: 'transient', error };
}
