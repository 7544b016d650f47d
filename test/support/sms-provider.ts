import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SmsPost {
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  idempotencyKey: string | undefined;
  form: Record<string, string>;
}

/**
 * A local HTTP endpoint standing in for a Twilio-compatible SMS API: records every form POST and answers
 * with the status `respond` picks (201 with a sid by default).
 */
export class SmsProvider {
  readonly posts: SmsPost[] = [];
  respond: (post: SmsPost) => number = () => 201;
  /** How long after a POST arrived (recorded: the message went out) it is answered. */
  answerAfterMs: (post: SmsPost) => number = () => 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<SmsProvider> {
    let provider: SmsProvider;
    const server = createServer((req, res) => {
      void readBody(req).then((body) => {
        const post: SmsPost = {
          path: req.url ?? '',
          authorization: req.headers.authorization,
          contentType: req.headers['content-type'],
          idempotencyKey: req.headers['idempotency-key'] as string | undefined,
          form: Object.fromEntries(new URLSearchParams(body)),
        };
        provider.posts.push(post);
        const status = provider.respond(post);
        const sid = `SM${provider.posts.length}`;
        setTimeout(() => {
          if (res.destroyed) return; // the caller gave up waiting
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(status < 300 ? { sid, status: 'queued' } : { code: status, message: 'stand-in error' }));
        }, provider.answerAfterMs(post));
      });
    });
    provider = new SmsProvider(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return provider;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  to(number: string): SmsPost[] {
    return this.posts.filter((p) => p.form.To === number);
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
