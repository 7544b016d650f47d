import { DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { LoggerModule } from 'nestjs-pino';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import type { Roles } from '../../app.module';
import { HealthController } from './health.controller';
import { loggerParams } from './logging';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { QueueLogging } from './queue-logging';
import { ReadinessService } from './readiness.service';
import { ScrapeCollectors } from './scrape-collectors';
import { VerificationTimer } from './verification-timer';
import { WorkerListener } from './worker-listener';

/**
 * Operations: JSON logs (nestjs-pino), health (terminus), Prometheus metrics. Global, so any module can
 * inject MetricsService. The queue board and the HTTP timing (http-metrics.middleware.ts) are mounted on
 * Express by bootstrap.
 */
@Module({})
export class OpsModule {
  static forRoot(roles: Roles): DynamicModule {
    return {
      module: OpsModule,
      global: true,
      imports: [
        LoggerModule.forRootAsync({ inject: [APP_CONFIG], useFactory: (config: AppConfig) => loggerParams(config) }),
        TerminusModule.forRoot({ errorLogStyle: 'json' }),
        DiscoveryModule,
      ],
      controllers: roles.http ? [HealthController, MetricsController] : [],
      providers: [
        MetricsService,
        ScrapeCollectors,
        ReadinessService,
        QueueLogging,
        ...(roles.worker ? [VerificationTimer] : []),
        ...(roles.worker && !roles.http ? [WorkerListener] : []),
      ],
      exports: [MetricsService, ReadinessService],
    };
  }
}
