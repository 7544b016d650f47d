import type { NextFunction, Request, Response } from 'express';

/**
 * A path whose percent-encoding does not decode (`%zz`, a lone `%`, bytes that are not UTF-8) fails in Express's
 * router, which decodes a route's parameters before any guard runs: an unauthenticated call got 400 where every
 * other call to that route gets 401, and a key holder 400 for an id that, like any other malformed id, names
 * nothing (404). Such a path's `%` signs are taken literally instead (escaped as `%25`), so the route sees the
 * characters as written and answers in its usual order: auth, then 404 for the unknown id. Paths that decode
 * are untouched, and so is the query string (parsed leniently on its own).
 */
export function literalPercents(req: Request, _res: Response, next: NextFunction): void {
  const url = req.url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path.includes('%')) {
    try {
      decodeURIComponent(path);
    } catch {
      req.url = path.replaceAll('%', '%25') + (q < 0 ? '' : url.slice(q));
    }
  }
  next();
}
