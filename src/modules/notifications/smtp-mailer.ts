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
 */
export class SmtpMailer {
  private readonly transport: Transporter;

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
  }

  async send(m: OutgoingEmail): Promise<SendResult> {
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
      return classifySmtpError(e as SmtpError);
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
