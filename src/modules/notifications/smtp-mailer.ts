import MailComposer from 'nodemailer/lib/mail-composer';
import SMTPConnection, { type SMTPEnvelope } from 'nodemailer/lib/smtp-connection';
import { Readable } from 'node:stream';
import type { SendResult } from './notification';
import type { EmailContent } from './templates';

export interface OutgoingEmail extends EmailContent {
  to: string;
  messageId: string;
}

/** A message built and encoded, ready for the wire: building can fail, sending it cannot fail to build. */
export interface ComposedEmail {
  envelope: SMTPEnvelope;
  raw: Buffer;
}

/**
 * Email over SMTP_URL (DESIGN §6, §8): `smtp://` upgrades with STARTTLS when the server offers it and stays
 * plain otherwise; `smtps://` is TLS from the first byte, with the server's certificate checked.
 *
 * One connection per message, opened by the send and closed by it: nothing waits for a pooled connection,
 * and a send cut by its deadline closes its own connection only. The deadline is the caller's signal and
 * covers the whole send; stepTimeoutMs bounds each phase (connect, greeting, every reply) on its own.
 */
export class SmtpMailer {
  private readonly options: SMTPConnection.Options;
  private readonly auth: { user: string; pass: string } | null;

  constructor(smtpUrl: string, private readonly from: string, stepTimeoutMs: number) {
    const url = new URL(smtpUrl);
    const secure = url.protocol === 'smtps:';
    this.options = {
      host: url.hostname,
      port: Number(url.port || (secure ? 465 : 587)),
      secure,
      connectionTimeout: stepTimeoutMs,
      greetingTimeout: stepTimeoutMs,
      socketTimeout: stepTimeoutMs,
      // STARTTLS on smtp:// is opportunistic, as between mail servers: the contract lets the session go plain
      // when the server offers no STARTTLS, so an active attacker can strip the offer and a certificate check
      // protects nothing there, while it refused every message to a relay with a self-signed or expired
      // certificate (smtp-server's built-in one) for 24 hours of retries, then dropped it. smtps:// checks.
      ...(secure ? {} : { tls: { rejectUnauthorized: false } }),
      logger: false,
    };
    this.auth = url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : null;
  }

  async compose(m: OutgoingEmail): Promise<ComposedEmail> {
    const node = new MailComposer({
      from: this.from,
      to: m.to,
      subject: m.subject,
      text: m.text,
      html: m.html,
      // The same Message-ID on every attempt: a copy that did get through is recognised as the same message.
      messageId: m.messageId,
    }).compile();
    return { envelope: node.getEnvelope(), raw: await node.build() };
  }

  /**
   * Sends one message; always settles by the time `deadline` aborts. Cut by the deadline before the server
   * took DATA, nothing was handed over: transient, tried again. Cut after the message went out, the server may
   * have it and its answer never came: in doubt, not resent (the outcome a vanished worker leaves).
   */
  send(m: ComposedEmail, deadline: AbortSignal, handOver: () => Promise<void> = async () => undefined): Promise<SendResult> {
    return new Promise((resolve) => {
      // Read only once the server answered DATA (SMTPConnection pipes it then): `handOver` runs first (the
      // caller stores the mark), and the bytes follow only once it resolved; it throwing sends nothing
      // (transient). `readableDidRead` (data emitted) is this process's mark of "handed over".
      let asked = false;
      const body = new Readable({
        read() {
          if (asked) return;
          asked = true;
          handOver().then(
            () => {
              this.push(m.raw);
              this.push(null);
            },
            (e: Error) => this.destroy(e),
          );
        },
      });
      const connection = new SMTPConnection(this.options);
      let settled = false;
      const settle = (r: SendResult) => {
        if (settled) return;
        settled = true;
        deadline.removeEventListener('abort', onDeadline);
        connection.close();
        resolve(r);
      };
      const onDeadline = () =>
        settle(
          body.readableDidRead
            ? { kind: 'in_doubt', error: "in doubt: the send's deadline passed after the message went out, before the server answered; not resent, to avoid a duplicate" }
            : { kind: 'transient', error: "deadline: the send's deadline passed before the message went out" },
        );
      if (deadline.aborted) return onDeadline();
      deadline.addEventListener('abort', onDeadline, { once: true });
      // A failure after the message went out without the server's answer (silent past stepTimeoutMs, or the
      // connection lost, before its final reply: RFC 5321 gives that reply 10 minutes) is in doubt too: a retry
      // would be a second copy. A 4xx answer to the message itself says the server did not take it (greylisting,
      // a full mailbox, a filter's soft reject): tried again, as is a transient failure before DATA was answered.
      const failed = (e: SmtpError) => {
        const r = classifySmtpError(e);
        return r.kind === 'transient' && body.readableDidRead && e.responseCode === undefined
          ? { kind: 'in_doubt' as const, error: `in doubt: ${r.error} after the message went out; not resent, to avoid a duplicate` }
          : r;
      };
      // Errors after settling (a close racing a reply) have nobody to tell; the listener keeps them from throwing.
      connection.on('error', (e) => settle(failed(e)));
      const sendMessage = () =>
        connection.send(m.envelope, body, (e, info) => {
          if (e) return settle(failed(e));
          if ((info?.rejected ?? []).length > 0) return settle({ kind: 'refused', error: `recipient refused: ${info?.response}` });
          settle({ kind: 'sent', response: info?.response ?? null });
        });
      connection.connect((e) => {
        if (e) return settle(classifySmtpError(e));
        if (!this.auth || !connection.allowsAuth) return sendMessage();
        connection.login(this.auth, (err) => (err ? settle(classifySmtpError(err)) : sendMessage()));
      });
    });
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
