import type { NextFunction, Request, RequestHandler, Response } from 'express';

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

/**
 * pay_page_url is `PAY_URL/<request_id>` (DESIGN §2), and the page must open there (DESIGN §4), but the page's
 * route is `/pay/:id`. When PAY_URL's path is another one (`https://shop.example/checkout`) or none (a host of
 * its own routed to the public listener), a GET of `<that path>/<uuid>` is served as `/pay/<uuid>`. Only a
 * UUID-shaped last segment is taken, and the configuration refuses a PAY_URL path under one of the service's
 * own routes (config.ts payUrl), so no route is shadowed. Null when PAY_URL's path is /pay already.
 */
export function payUrlAlias(payUrl: string): RequestHandler | null {
  const base = new URL(payUrl).pathname.replace(/\/+$/, '');
  if (base.toLowerCase() === '/pay') return null;
  const escaped = base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // Express matches routes case-insensitively and ignores a trailing slash; so does the alias.
  const pattern = new RegExp(`^${escaped}/(${UUID})/?$`, 'i');
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (req.method === 'GET' || req.method === 'HEAD') {
      const q = req.url.indexOf('?');
      const m = pattern.exec(q < 0 ? req.url : req.url.slice(0, q));
      if (m) req.url = `/pay/${m[1]}${q < 0 ? '' : req.url.slice(q)}`;
    }
    next();
  };
}
