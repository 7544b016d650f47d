import { Controller, Get, Header, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ReadinessService } from './readiness.service';

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

  /** 200 when Postgres, Redis and every configured chain answer; 503 with the failing ones otherwise. */
  @Get('ready')
  @Header('cache-control', 'no-store')
  async ready(@Res({ passthrough: true }) res: Response) {
    const { up, body } = await this.readiness.check();
    res.status(up ? 200 : 503);
    return body;
  }
}
