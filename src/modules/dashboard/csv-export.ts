import { Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { AppError } from '../../common/errors';
import { RedisLeases, type HeldLease } from '../../common/redis/redis-lease';

/** How long an export's lease outlives its holder: a crashed instance blocks the merchant's next export this long at most. */
const EXPORT_LEASE_MS = 30_000;

/**
 * A CSV download written batch by batch with the socket's back-pressure respected, so an export of any size
 * holds one batch in memory. At most one export per merchant runs at a time across every instance (an export
 * reads every matching request, so a merchant could otherwise keep many of them busy): a Redis lease per
 * merchant, renewed while the export streams, released when it ends, lapsing on its own if the process dies.
 *
 * With Redis away the export fails open, to this process's own rule (one per merchant per instance): the
 * export only reads the merchant's own data behind its session, the route's per-minute limit fails open
 * likewise (RedisConnections), and refusing every merchant's download during an outage would cost more than
 * the few concurrent exports it could allow (at most one per instance).
 */
@Injectable()
export class CsvExports {
  private readonly logger = new Logger('CsvExport');
  /** This process's exports: refused here without a round trip, and the only rule while Redis is away. */
  private readonly running = new Set<string>();

  constructor(private readonly leases: RedisLeases) {}

  /** Another export of the merchant's still running, here or on another instance → 429 rate_limited, before anything is written. */
  async stream(merchantId: string, res: Response, filename: string, header: string, chunks: AsyncIterable<string>): Promise<void> {
    if (this.running.has(merchantId)) throw exportRunning();
    this.running.add(merchantId);
    try {
      const lease = await this.lease(merchantId, requestIdOf(res));
      if (lease === null) throw exportRunning();
      try {
        await this.write(res, filename, header, chunks);
      } finally {
        await lease?.release();
      }
    } finally {
      this.running.delete(merchantId);
    }
  }

  /** The merchant's lease; null when another instance holds it; undefined when Redis cannot say (fail open). */
  private async lease(merchantId: string, reqId: string | undefined): Promise<HeldLease | null | undefined> {
    try {
      return await this.leases.acquire(`csv-export:${merchantId}`, EXPORT_LEASE_MS);
    } catch (e) {
      this.logger.warn({ reqId }, `CSV export of merchant ${merchantId} without its lease (Redis: ${(e as Error).message}); one per merchant in this process still holds`);
      return undefined;
    }
  }

  private async write(res: Response, filename: string, header: string, chunks: AsyncIterable<string>): Promise<void> {
    res.status(200);
    res.setHeader('content-type', 'text/csv; charset=utf-8');
    res.setHeader('content-disposition', `attachment; filename="${filename}"`);
    res.setHeader('cache-control', 'no-store');
    res.setHeader('x-content-type-options', 'nosniff');
    res.write(header);
    try {
      for await (const chunk of chunks) {
        if (res.destroyed || res.closed) return;
        if (!res.write(chunk)) await drainedOrClosed(res);
      }
      if (res.destroyed || res.closed) return;
    } catch (e) {
      // The status line is gone, so no error body can follow: a truncated file must not look complete, and
      // cutting the connection is the answer. Logged here, the one place that sees it.
      this.logger.error({ reqId: requestIdOf(res) }, `CSV export ${filename} failed after the headers: ${(e as Error).message}`);
      res.destroy(e as Error);
      return;
    }
    res.end();
  }
}

function exportRunning(): AppError {
  return new AppError('rate_limited', { errors: [{ field: 'export', message: 'another export of yours is still running' }] });
}

/** Resolves when the socket takes more, or at once when the client is already gone ('close' fired before). */
function drainedOrClosed(res: Response): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed || res.closed) {
      resolve();
      return;
    }
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** The id of the request being answered (set by jsonBody): log lines carry it as a field (no log context). */
function requestIdOf(res: Response): string | undefined {
  return (res.req as { id?: string } | undefined)?.id;
}
