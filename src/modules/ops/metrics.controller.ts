import { Controller, Get, Header, Res } from '@nestjs/common';
import type { Response } from 'express';
import { MetricsService } from './metrics.service';

/** Prometheus exposition. The listener gate (src/bootstrap.ts) serves /metrics on the admin listener only. */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('cache-control', 'no-store')
  async scrape(@Res() res: Response): Promise<void> {
    const text = await this.metrics.render();
    res.status(200).type(this.metrics.contentType).send(text);
  }
}
