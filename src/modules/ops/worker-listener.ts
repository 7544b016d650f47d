import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { MetricsService } from './metrics.service';
import { ReadinessService } from './readiness.service';

/**
 * A worker-only process has no HTTP application, yet its orchestrator needs health checks and its metrics
 * (verification latency is measured where verification runs) need scraping. This small listener on
 * ADMIN_HOST:WORKER_ADMIN_PORT serves /health/live, /health/ready and /metrics for it, and nothing else.
 */
@Injectable()
export class WorkerListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('WorkerListener');
  private server: Server | null = null;
  url: string | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly readiness: ReadinessService,
    private readonly metrics: MetricsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const send = (status: number, type: string, body: string) => {
        res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
        res.end(body);
      };
      const json = 'application/json; charset=utf-8';
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(404, json, '{"ok":false,"error":"not_found"}');
      if (path === '/health/live') return send(200, json, '{"ok":true,"status":"ok"}');
      if (path === '/health/ready') {
        return void this.readiness.check().then(
          (r) => send(r.up ? 200 : 503, json, JSON.stringify(r.body)),
          () => send(503, json, '{"ok":false,"status":"error"}'),
        );
      }
      if (path === '/metrics') {
        return void this.metrics.render().then(
          (text) => send(200, this.metrics.contentType, text),
          () => send(500, json, '{"ok":false,"error":"internal_error"}'),
        );
      }
      send(404, json, '{"ok":false,"error":"not_found"}');
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.config.workerAdminPort, this.config.adminHost, () => resolve());
      });
    } catch (e) {
      // The worker's job is the queues: a taken port must not stop it. Health checks will say so.
      this.logger.error(`worker health/metrics listener not started on ${this.config.adminHost}:${this.config.workerAdminPort}: ${(e as Error).message}`);
      return;
    }
    this.server = server;
    const addr = server.address() as AddressInfo;
    this.url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
    this.logger.log(`worker health and metrics on ${this.url}`);
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}
