import { Controller, Get, Header, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ReadinessService, withoutReasons } from './readiness.service';

/** Liveness and readiness, on both listeners (and on the worker's own listener, see WorkerListener). */
@Controller('health')
export class HealthController {
  constructor(private readonly readiness: ReadinessService) {}

  /** The process is up and its event loop turns: nothing else is checked, so a restart is never caused by a dependency. */
  @Get('live')
  @Header('cache-control', 'no-store')
  live() {
    return { ok: true, status: 'ok' };
  }

  /**
   * 200 when Postgres, Redis and every configured chain answer; 503 with the failing ones otherwise. The
   * public listener names the failing checks without their reasons (driver errors name internal hosts and
   * ports: `connect ECONNREFUSED 10.0.0.5:6379`, the RPC's origin); the admin listener gives them.
   */
  @Get('ready')
  @Header('cache-control', 'no-store')
  async ready(@Req() req: Request & { adminListener?: boolean }, @Res({ passthrough: true }) res: Response) {
    const { up, body } = await this.readiness.check();
    res.status(up ? 200 : 503);
    return req.adminListener ? body : withoutReasons(body);
  }
}
