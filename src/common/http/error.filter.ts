import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppError, type ErrorCode } from '../errors';

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'insufficient_scope',
  404: 'not_found',
  405: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/**
 * The one place errors become HTTP: AppError → its status and {ok:false, error, ...extra}; framework
 * exceptions → the nearest documented code; anything else → a bare 500 with the request id, detail logged.
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const res = ctx.getResponse<Response>();
    const req = ctx.getRequest<Request & { id?: string }>();
    let status: number;
    let body: Record<string, unknown>;
    if (exception instanceof AppError) {
      status = exception.status;
      body = { ok: false, error: exception.code, ...exception.extra };
    } else if (exception instanceof HttpException && BY_STATUS[exception.getStatus()]) {
      status = exception.getStatus();
      const code = BY_STATUS[status];
      body = { ok: false, error: code };
    } else {
      status = 500;
      body = { ok: false, error: 'internal_error', request_id: req.id };
      // The request id as a field of its own: partner-API calls log without a per-request context.
      this.logger.error(
        { reqId: req.id, err: exception },
        `request ${req.id ?? '-'} ${req.method} ${req.path} failed: ${(exception as Error)?.message ?? String(exception)}`,
      );
    }
    if (res.headersSent) return;
    res.status(status).json(body);
  }
}
