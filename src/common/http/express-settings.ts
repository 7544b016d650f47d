import type { Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AppConfig } from '../../config/config';

/**
 * The Express settings of the HTTP role, shared with the framework floor of the bench (bench/floor-server.ts),
 * so the floor runs on Express configured exactly as the service runs it.
 */
export function expressSettings(app: NestExpressApplication, trustProxy: AppConfig['trustProxy']): void {
  const express = app.getHttpAdapter().getInstance();
  express.disable('x-powered-by');
  express.set('etag', false);
  // Behind a load balancer the client address (per-address limits) comes from X-Forwarded-For.
  if (trustProxy !== false) express.set('trust proxy', trustProxy);
}

/** Keep-alive longer than a load balancer's idle timeout (60 s), so the balancer closes idle connections first. */
export function serverTimeouts(server: Server): void {
  server.keepAliveTimeout = 65000;
  server.headersTimeout = 66000;
}
