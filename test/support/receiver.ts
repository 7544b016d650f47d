import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the receiver answers to one call. */
export interface Answer {
  status?: number;
  /** Wait this long after the request body arrived before answering. */
  delayMs?: number;
  /** Never answer (the connection stays open until the client gives up or the receiver closes). */
  hang?: boolean;
  headers?: Record<string, string>;
  body?: string;
}

export type Script = (call: ReceivedCall) => Answer | Promise<Answer>;

export interface ReceivedCall {
  /** 1-based order of arrival. */
  n: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body bytes exactly as received: what a signature must be checked against. */
  rawBody: Buffer;
  /** Date.now() when the body had fully arrived. */
  at: number;
  /** Date.now() when the answer was sent (undefined while pending or for a hang). */
  answeredAt?: number;
  json(): any;
}

/**
 * A real HTTP server on 127.0.0.1 (port 0) standing in for a partner's webhook endpoint. Each call is
 * recorded with its raw body and headers; the answer comes from a list of planned answers (one per call,
 * in order) and then from a default, or from a script function.
 */
export class Receiver {
  readonly calls: ReceivedCall[] = [];
  private planned: Answer[] = [];
  private fallback: Answer | Script = { status: 200 };
  private readonly sockets = new Set<Socket>();
  private waiters: Array<() => void> = [];
  connections = 0;

  private constructor(private readonly server: http.Server, readonly port: number) {}

  static async start(): Promise<Receiver> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const r = new Receiver(server, (server.address() as AddressInfo).port);
    server.on('connection', (s: Socket) => {
      r.connections++;
      r.sockets.add(s);
      s.on('close', () => r.sockets.delete(s));
    });
    server.on('request', (req, res) => r.handle(req, res));
    return r;
  }

  /** The URL to register as a webhook. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Answers for the next calls, in order; afterwards the default applies. */
  plan(...answers: Answer[]): this {
    this.planned.push(...answers);
    return this;
  }

  /** The answer once the plan is used up (initially 200). */
  otherwise(answer: Answer | Script): this {
    this.fallback = answer;
    return this;
  }

  /** Calls carrying this delivery id (x-service-delivery). */
  callsFor(deliveryId: string): ReceivedCall[] {
    return this.calls.filter((c) => c.headers['x-service-delivery'] === deliveryId);
  }

  /** Resolves once `predicate` holds over the recorded calls; rejects after timeoutMs. */
  async waitUntil(predicate: (calls: ReceivedCall[]) => boolean, timeoutMs = 10_000): Promise<ReceivedCall[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.calls)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`receiver: condition not met within ${timeoutMs} ms (${this.calls.length} calls so far)`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.calls;
  }

  waitForCalls(n: number, timeoutMs = 10_000): Promise<ReceivedCall[]> {
    return this.waitUntil((c) => c.length >= n, timeoutMs);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const call: ReceivedCall = {
        n: this.calls.length + 1,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        at: Date.now(),
        json: () => JSON.parse(rawBody.toString('utf8')),
      };
      this.calls.push(call);
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
      void this.answer(call, res);
    });
  }

  private async answer(call: ReceivedCall, res: http.ServerResponse): Promise<void> {
    const next = this.planned.shift() ?? this.fallback;
    const a = typeof next === 'function' ? await next(call) : next;
    if (a.hang) return;
    if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
    if (res.destroyed) return;
    call.answeredAt = Date.now();
    res.writeHead(a.status ?? 200, { 'content-type': 'text/plain', ...(a.headers ?? {}) });
    res.end(a.body ?? '');
  }
}
