import { Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { AppError } from '../../common/errors';

/**
 * A CSV download written batch by batch with the socket's back-pressure respected, so an export of any size
 * holds one batch in memory; at most one export per merchant runs in this process at a time (an export reads
 * every matching request, so a merchant could otherwise keep many of them busy).
 */
@Injectable()
export class CsvExports {
  private readonly logger = new Logger('CsvExport');
  private readonly running = new Set<string>();

  /** Another export of the merchant's still running → 429 rate_limited, before anything is written. */
  async stream(merchantId: string, res: Response, filename: string, header: string, chunks: AsyncIterable<string>): Promise<void> {
    if (this.running.has(merchantId)) {
      throw new AppError('rate_limited', { errors: [{ field: 'export', message: 'another export of yours is still running' }] });
    }
    this.running.add(merchantId);
    try {
      await this.write(res, filename, header, chunks);
    } finally {
      this.running.delete(merchantId);
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
      this.logger.error(`CSV export ${filename} failed after the headers: ${(e as Error).message}`);
      res.destroy(e as Error);
      return;
    }
    res.end();
  }
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
