import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { MetricsService, matchedRoute } from './metrics.service';

/**
 * Times every request the application routes and records it under the matched route pattern (Express sets
 * req.route when a route matched; 404s of unknown paths share one label), method and status.
 */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: MetricsService) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const start = performance.now();
    res.once('finish', () => {
      this.metrics.observeHttp(req.method, matchedRoute(req), res.statusCode, (performance.now() - start) / 1000);
    });
    next();
  }
}
