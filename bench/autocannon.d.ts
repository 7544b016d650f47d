/**
 * The part of autocannon's programmatic API the bench uses (autocannon 9 ships no types, and the
 * DefinitelyTyped package lags two majors behind). Ambient, so it needs no change to package.json.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface RawRequest {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }

    interface Request extends RawRequest {
      /** Mutates the request before it is sent; returning a falsy value restarts the sequence. */
      setupRequest?: (request: RawRequest, context: Record<string, unknown>) => RawRequest | null | undefined;
      onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void;
    }

    interface Options extends RawRequest {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      amount?: number;
      /** Seconds. */
      timeout?: number;
      pipelining?: number;
      title?: string;
      requests?: Request[];
      warmup?: { connections?: number; duration?: number };
      excludeErrorStats?: boolean;
      renderProgressBar?: boolean;
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      sent?: number;
      p2_5: number;
      p50: number;
      p75: number;
      p90: number;
      p97_5: number;
      p99: number;
      p99_9: number;
      p99_99: number;
      p99_999: number;
    }

    interface Result {
      title?: string;
      url: string;
      /** Seconds. */
      duration: number;
      start: Date;
      finish: Date;
      connections: number;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      resets: number;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats: Record<string, { count: number }>;
      latency: Histogram;
      requests: Histogram;
      throughput: Histogram;
      /** Set when the run had a warm-up phase. */
      warmup?: Result;
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      /** Absent on an instance run with a warm-up (autocannon then returns a bare tracker). */
      stop?(): void;
    }
  }

  function autocannon(opts: autocannon.Options): autocannon.Instance;
  export = autocannon;
}
