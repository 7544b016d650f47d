import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Logger, type INestApplication } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { NextFunction, Request, Response } from 'express';
import { DataSource } from 'typeorm';
import { AppError, ERROR_STATUS } from '../../common/errors';
import { isStorableText, mediaType, unsupportedMediaType, type ParsedRequest } from '../../common/http/body';
import { ALL_QUEUES } from '../../common/queue/queues';
import type { AppConfig } from '../../config/config';
import { adminClient, type AdminAuthFailures } from '../admin/admin-token.guard';
import { AuditService } from '../audit/audit.service';

export const QUEUE_BOARD_PATH = '/admin/queues';
export const QUEUE_BOARD_USER = 'admin';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * HTTP basic auth, user `admin`, password ADMIN_TOKEN. Both parts are compared as SHA-256 digests with
 * timingSafeEqual, so neither the length nor the content of the token leaks through timing. Wrong credentials
 * count in the admin failure budget (shared with /admin/api): past it the address gets 429 rate_limited before
 * anything is compared, right credentials included. A call without credentials (a browser before its prompt)
 * is not counted.
 */
export function basicAuth(password: string, failures: AdminAuthFailures, user = QUEUE_BOARD_USER) {
  const expected = digest(`${user}:${password}`);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const address = adminClient(req);
    try {
      failures.refuseIfBlocked(address);
      await failures.refuseIfOverBudget(address);
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      res.setHeader('cache-control', 'no-store');
      res.status(e.status).json({ ok: false, error: e.code });
      return;
    }
    const header = req.headers.authorization;
    const m = header ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
    const given = m ? Buffer.from(m[1], 'base64').toString('utf8') : '';
    if (m && timingSafeEqual(digest(given), expected)) return next();
    if (header !== undefined) await failures.record(address);
    res.setHeader('WWW-Authenticate', 'Basic realm="queues", charset="UTF-8"');
    res.setHeader('cache-control', 'no-store');
    res.status(401).json({ ok: false, error: 'unauthorized' });
  };
}

/** The content types an HTML form can send cross-site without a CORS preflight. */
const FORM_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'];

/**
 * The board's API acts on POST/PUT/DELETE with the operator's cached basic-auth credentials, so a cross-site
 * form must not reach it (DESIGN §7): any body that is not application/json → 415, and so is a form's
 * content type even with an empty body (the board's own script sends JSON or no body at all). A JSON body
 * that could not be read (malformed, over MAX_BODY) is refused as on every JSON route (400 invalid_json, 413
 * payload_too_large): the board, which runs no Nest guard, would otherwise act on an empty body (a job added
 * with no name and no data).
 */
function jsonOnly(req: Request & ParsedRequest, res: Response, next: NextFunction): void {
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  const type = mediaType(req);
  const problem = unsupportedMediaType(req) || (type !== undefined && FORM_TYPES.includes(type)) ? 'unsupported_media_type' : req.bodyProblem;
  if (problem) {
    res.setHeader('cache-control', 'no-store');
    res.status(ERROR_STATUS[problem]).json({ ok: false, error: problem });
    return;
  }
  next();
}

/**
 * Every board answer, refusals included: never framed by another page (a framed board would make a click
 * same-origin), never kept by a cache (job data holds request ids and payloads).
 */
function boardHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('content-security-policy', "frame-ancestors 'none'");
  res.setHeader('cache-control', 'no-store');
  next();
}

/**
 * A request that acts (not GET/HEAD) must come from the board's own page, or from no browser at all. A
 * cross-site request needs no body to act (a bodiless POST adds an empty job, retries or promotes one), and a
 * browser sends it without a preflight (`fetch` in no-cors mode, `navigator.sendBeacon`), with the operator's
 * cached basic-auth credentials. Browsers name where it comes from: `Sec-Fetch-Site` (anything but
 * same-origin, or none for a typed URL, is refused) or, in browsers without it, `Origin` on every cross-origin
 * POST (refused unless it is this listener's own host). A client that is no browser (curl, a script) sends
 * neither and is let through on its credentials alone.
 */
function sameOriginOnly(req: Request, res: Response, next: NextFunction): void {
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  let crossSite = false;
  // The browser's own judgement first: it holds behind a proxy that rewrites Host, where Origin would not.
  if (site !== undefined) crossSite = site !== 'same-origin' && site !== 'none';
  else if (origin !== undefined) {
    try {
      crossSite = new URL(origin).host !== req.headers.host;
    } catch {
      crossSite = true; // "null" (a sandboxed frame, a redirect across sites) or garbage
    }
  }
  if (crossSite) {
    res.setHeader('cache-control', 'no-store');
    res.status(403).json({ ok: false, error: 'forbidden' });
    return;
  }
  next();
}

/**
 * The path as the trail keeps it, at most 500 characters: as the board reads it (`%72ates` is the rates queue),
 * so the trail is searchable; as sent when malformed, or when decoded (or cut to length, which can split a
 * surrogate pair) it holds what Postgres cannot store as text (NUL, a lone surrogate), which would fail the
 * audit row and the act with a 500.
 */
function auditedPath(path: string): string {
  const raw = `${QUEUE_BOARD_PATH}${path}`.slice(0, 500);
  try {
    const d = `${QUEUE_BOARD_PATH}${decodeURIComponent(path)}`.slice(0, 500);
    return isStorableText(d) ? d : raw;
  } catch {
    return raw;
  }
}

/**
 * Every act on the board (not GET/HEAD: a retry, a clean, a promote, a job added or removed) is stored in the
 * audit trail as `queue_board.action` with the method and the path (queue, job and what was done; never the
 * body, which may carry a job's data), before the board does it. Its change is in Redis, so the row cannot
 * share a transaction with it: stored first, an act never happens without its row; one that fails after has
 * a row all the same. A row that cannot be stored stops the act (500 internal_error).
 */
function auditedActs(audit: AuditService, dataSource: DataSource, logger: Logger) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return next();
    try {
      await audit.record(dataSource.manager, { kind: 'admin', address: adminClient(req) }, {
        partnerId: null, action: 'queue_board.action', targetId: null,
        details: { method: req.method, path: auditedPath(req.path) },
      });
    } catch (e) {
      logger.error(`cannot store a queue board action in the audit trail, refused: ${(e as Error).message}`);
      res.setHeader('cache-control', 'no-store');
      res.status(500).json({ ok: false, error: 'internal_error' });
      return;
    }
    next();
  };
}

/**
 * The BullMQ board at /admin/queues with every queue of the service. Mounted on the Express app before the
 * Nest routes; the listener gate (bootstrap) already keeps /admin/* off the public listener.
 */
export function mountQueueBoard(app: INestApplication, config: AppConfig, failures: AdminAuthFailures): void {
  const queues = ALL_QUEUES.map((name) => app.get<Queue>(getQueueToken(name), { strict: false }));
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(QUEUE_BOARD_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'PRS queues' } },
  });
  const router = serverAdapter.getRouter() as { disable?: (setting: string) => void };
  router.disable?.('x-powered-by');
  const audited = auditedActs(app.get(AuditService, { strict: false }), app.get(DataSource), new Logger('QueueBoard'));
  app.use(QUEUE_BOARD_PATH, boardHeaders, basicAuth(config.adminToken, failures), sameOriginOnly, jsonOnly, audited, router);
}
