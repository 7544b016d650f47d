import { simpleParser, type ParsedMail } from 'mailparser';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

/** A message as the catcher received it. */
export interface CaughtMail {
  to: string[];
  from: string;
  subject: string;
  messageId: string;
  text: string;
  html: string;
  raw: string;
  parsed: ParsedMail;
}

/** What to answer at RCPT TO: null accepts; a code (e.g. 451, 550) refuses with it. */
export type RcptRule = (to: string) => number | null;

/**
 * A real SMTP server (the `smtp-server` package) on loopback that keeps what it receives: for the sandbox
 * and the specs. Plain SMTP, no STARTTLS offered (the service's `smtp://` then stays plain), any or no auth.
 */
export class SmtpCatcher {
  readonly mails: CaughtMail[] = [];
  rcptRule: RcptRule = () => null;
  /** What to answer once the whole message arrived (after DATA): null accepts (250); a code refuses it, and it is not kept. */
  dataRule: RcptRule = () => null;
  /** Called once the whole message arrived, before the server answers 250; the answer waits for it. */
  beforeAccept: (mail: CaughtMail) => Promise<void> | void = () => undefined;
  private server: SMTPServer | null = null;
  private listeners: Array<(m: CaughtMail) => void> = [];

  private constructor(
    public port: number,
    private readonly pipelining: boolean,
  ) {}

  /** `pipelining: false` hides PIPELINING, so a client waits for the answer to each of MAIL, RCPT and DATA. */
  static async start(port = 0, opts: { pipelining?: boolean } = {}): Promise<SmtpCatcher> {
    const c = new SmtpCatcher(port, opts.pipelining ?? true);
    await c.up();
    return c;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  onMail(listener: (m: CaughtMail) => void): void {
    this.listeners.push(listener);
  }

  /** Starts listening (again, on the same port after down()). */
  async up(): Promise<void> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      hidePIPELINING: !this.pipelining,
      logger: false,
      onAuth: (_auth, _session, cb) => cb(null, { user: 'any' }),
      onRcptTo: (address, _session, cb) => {
        const code = this.rcptRule(address.address);
        if (code === null) return cb();
        const err = Object.assign(new Error(code >= 500 ? 'mailbox unavailable' : 'try again later'), { responseCode: code });
        cb(err);
      },
      onData: (stream: SMTPServerDataStream, session: SMTPServerSession, cb) => {
        const chunks: Buffer[] = [];
        stream.on('data', (d: Buffer) => chunks.push(d));
        stream.on('end', () => {
          const refusal = session.envelope.rcptTo.map((a) => this.dataRule(a.address)).find((c) => c !== null);
          if (refusal) {
            cb(Object.assign(new Error(refusal >= 500 ? 'message refused' : 'try again later'), { responseCode: refusal }));
            return;
          }
          const raw = Buffer.concat(chunks).toString('utf8');
          simpleParser(raw)
            .then(async (parsed) => {
              const mail: CaughtMail = {
                to: session.envelope.rcptTo.map((a) => a.address),
                from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                subject: parsed.subject ?? '',
                messageId: parsed.messageId ?? '',
                text: parsed.text ?? '',
                html: typeof parsed.html === 'string' ? parsed.html : '',
                raw,
                parsed,
              };
              this.mails.push(mail);
              for (const l of this.listeners) l(mail);
              await this.beforeAccept(mail);
              cb();
            })
            .catch((e: Error) => cb(e));
        });
      },
    });
    server.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.listen(this.port, '127.0.0.1', () => resolve());
      server.server.once('error', reject);
    });
    this.port = (server.server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening: connections are refused until up(). */
  async down(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  to(address: string): CaughtMail[] {
    return this.mails.filter((m) => m.to.includes(address));
  }
}
