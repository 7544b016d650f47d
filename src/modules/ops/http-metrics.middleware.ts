import type { NextFunction, Request, Response } from 'express';
import { type MetricsService, matchedRoute } from './metrics.service';

/**
 * Times every request that reaches the application's routes and records it under the matched route pattern
 * (Express sets req.route when a route matched; 404s of unknown paths share one label), method and status.
 * Mounted by bootstrap on Express, after the queue board and before the Nest routes, where a Nest module
 * middleware would run: a plain Express middleware, because Nest runs each module middleware as one more
 * route layer, an async proxy and a per-request bookkeeping entry, on every call of the partner API too.
 */
export function httpMetrics(metrics: MetricsService) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = performance.now();
    res.once('finish', () => {
      metrics.observeHttp(req.method, matchedRoute(req), res.statusCode, (performance.now() - start) / 1000);
    });
    next();
  };
}
