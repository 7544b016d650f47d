import 'reflect-metadata';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type INestApplication, type INestApplicationContext, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { Logger as JsonLogger } from 'nestjs-pino';
import { AppModule, type Extensions, type Roles } from './app.module';
import { ConfigError, type AppConfig } from './config/config';
import { BROWSER_API_PATHS, browserApiHeaders, strictTransport } from './common/http/api-headers';
import { jsonBody } from './common/http/body';
import { answerClientErrors } from './common/http/client-errors';
import { closeBounded } from './common/queue/shutdown';
import { expressSettings, serverTimeouts } from './common/http/express-settings';
import { literalPercents } from './common/http/literal-percents';
import { httpMetrics } from './modules/ops/http-metrics.middleware';
import { apiAccessLog, pageAccessLog } from './modules/ops/logging';
import { MetricsService } from './modules/ops/metrics.service';
import { AdminAuthFailureLimiter } from './modules/admin/admin-auth-failure.limiter';
import { mountQueueBoard } from './modules/ops/queue-board';
import { payUrlAlias } from './modules/pages/pay-url-alias';
import { portalFormBody } from './modules/portal/portal-http';

export interface Running {
  app: INestApplication | INestApplicationContext;
  publicUrl?: string;
  adminUrl?: string;
  publicServer?: Server;
  adminServer?: Server;
  close(): Promise<void>;
}

interface ListenerTagged extends IncomingMessage {
  adminListener?: boolean;
}

const PARTNER_API = /^\/api\//i;
/** The smallest pool a worker runs on (see start). */
const WORKER_MIN_POOL = 3;
const PUBLIC_ONLY = ['/pay', '/onboarding', '/portal', '/assets/', '/terms', '/dashboard', '/m/', '/plan/'];

/** Paths each listener serves: /admin only on ADMIN_PORT; pages only on PORT; the partner API on both. */
function listenerGate(req: Request & ListenerTagged, res: Response, next: NextFunction): void {
  // The partner API (served on both listeners) is neither admin-only nor public-only: no more to look at.
  if (PARTNER_API.test(req.path)) return next();
  // Express matches routes case-insensitively and ignores a trailing slash: so must the gate.
  const path = req.path.toLowerCase().replace(/\/+$/, '') || '/';
  const adminOnly = path === '/admin' || path.startsWith('/admin/') || path === '/metrics';
  const publicOnly = PUBLIC_ONLY.some((p) => path.startsWith(p)) || path === '/m' || path === '/plan';
  if ((adminOnly && !req.adminListener) || (publicOnly && req.adminListener)) {
    res.status(404).json({ ok: false, error: 'not_found' });
    return;
  }
  next();
}

function listen(server: Server, port: number, host?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address() as AddressInfo;
      const h = addr.family === 'IPv6' ? (host && host !== '::' ? `[${host}]` : 'localhost') : addr.address === '0.0.0.0' ? 'localhost' : addr.address;
      resolve(`http://${h}:${addr.port}`);
    });
  });
}

/**
 * Starts the service with the given roles. HTTP mode serves two listeners over one Express app: PORT
 * (partner API, pay and onboarding pages) and ADMIN_PORT on ADMIN_HOST (the same partner API plus /admin).
 */
export async function start(
  config: AppConfig,
  roles: Roles,
  opts: Extensions & { logger?: LoggerService | false } = {},
): Promise<Running> {
  if (roles.worker && config.databasePoolSize < WORKER_MIN_POOL) {
    // Two chain scans at once each hold a connection for the scan's lock while their reads take others.
    throw new ConfigError('DATABASE_POOL_SIZE', `must be at least ${WORKER_MIN_POOL} for a worker, got ${config.databasePoolSize}`);
  }
  // Without a logger of the caller's, every line goes out as JSON through pino (src/modules/ops/logging.ts);
  // `logger: false` (tests) silences pino's request lines too.
  const json = opts.logger === undefined;
  const module = AppModule.forRoot(opts.logger === false ? { ...config, logLevel: 'silent' } : config, roles, {
    chain: opts.chain,
    rates: opts.rates,
    plans: opts.plans,
  });
  if (!roles.http) {
    const ctx = await NestFactory.createApplicationContext(module, { logger: opts.logger, bufferLogs: json });
    if (json) ctx.useLogger(ctx.get(JsonLogger));
    ctx.enableShutdownHooks();
    return { app: ctx, close: () => closeBounded(ctx) };
  }
  const app = await NestFactory.create<NestExpressApplication>(module, { bodyParser: false, logger: opts.logger, bufferLogs: json });
  if (json) app.useLogger(app.get(JsonLogger));
  expressSettings(app, config.trustProxy);
  app.use(literalPercents);
  const payAlias = payUrlAlias(config.payUrl);
  if (payAlias) app.use(payAlias); // before the gate, which then keeps the page off the admin listener
  app.use(listenerGate);
  const hsts = strictTransport(config.publicUrl);
  if (hsts) app.use(hsts);
  app.use(BROWSER_API_PATHS, browserApiHeaders);
  app.use('/portal', portalFormBody); // the portal's HTML forms; the JSON parser skips what it consumed
  app.use(jsonBody);
  app.use('/api/v1', apiAccessLog(config));
  mountQueueBoard(app, config, app.get(AdminAuthFailureLimiter));
  app.use(httpMetrics(app.get(MetricsService)));
  app.use(pageAccessLog(config)); // every other route's closing line (where nestjs-pino's middleware was)
  await app.init();

  const handler = app.getHttpAdapter().getInstance() as (req: IncomingMessage, res: ServerResponse) => void;
  const publicServer = app.getHttpServer() as Server;
  const adminServer = createServer((req: ListenerTagged, res) => {
    req.adminListener = true;
    handler(req, res);
  });
  for (const s of [publicServer, adminServer]) {
    serverTimeouts(s);
    answerClientErrors(s);
  }
  const publicUrl = await listen(publicServer, config.port);
  const adminUrl = await listen(adminServer, config.adminPort, config.adminHost);
  return {
    app,
    publicUrl,
    adminUrl,
    publicServer,
    adminServer,
    close: async () => {
      adminServer.closeAllConnections();
      await new Promise<void>((r) => adminServer.close(() => r()));
      await closeBounded(app);
    },
  };
}
