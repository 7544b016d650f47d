import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from './config/config';
import { DatabaseModule } from './database/database.module';
import { ErrorFilter } from './common/http/error.filter';
import { DtoPipe } from './common/http/validation';
import { QueueModule } from './common/queue/queue.module';
import { RedisModule } from './common/redis/redis.module';
import { RateLimitModule } from './common/rate-limit/rate-limit.module';
import { AdminAuthModule } from './modules/admin/admin-auth.module';
import { AdminModule } from './modules/admin/admin.module';
import { AlertsModule } from './modules/alerts/alerts.module';
import { AuditModule } from './modules/audit/audit.module';
import { AuthModule } from './modules/auth/auth.module';
import { ChainModule, type ChainModuleOptions } from './modules/chain/chain.module';
import { DashboardModule } from './modules/dashboard/dashboard.module';
import { DocsModule } from './modules/docs/docs.module';
import { MerchantsModule } from './modules/merchants/merchants.module';
import { NotificationsModule } from './modules/notifications/notifications.module';
import { OpsModule } from './modules/ops/ops.module';
import { PagesModule } from './modules/pages/pages.module';
import { PlansCoreModule, type PlansModuleOptions } from './modules/plans/plans-core.module';
import { PlansModule } from './modules/plans/plans.module';
import { PortalModule } from './modules/portal/portal.module';
import { RatesModule, type RatesModuleOptions } from './modules/rates/rates.module';
import { RequestFactsModule } from './modules/requests/request-facts.module';
import { RequestsModule } from './modules/requests/requests.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';
import { WorkerModule } from './worker.module';

export interface Roles {
  /** Serve HTTP: partner API, pages, admin. */
  http: boolean;
  /** Run the queue processors and repeating jobs. */
  worker: boolean;
}

/** The extension points: each is the options of its module's `forRoot` (docs/extending.md). */
export interface Extensions {
  chain?: ChainModuleOptions;
  rates?: RatesModuleOptions;
  /** The plans' clock (integration tests move time). */
  plans?: PlansModuleOptions;
}

@Module({})
class ConfigHolder {}

/** One module graph for both entry points; the roles decide what is mounted (DESIGN §1). */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, roles: Roles, extensions: Extensions = {}): DynamicModule {
    const configModule: DynamicModule = {
      module: ConfigHolder,
      global: true,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
    const http = roles.http
      ? [
          RateLimitModule,
          AuthModule,
          MerchantsModule,
          RequestsModule,
          PagesModule,
          AdminModule,
          AlertsModule,
          AuditModule,
          DocsModule,
          PortalModule,
          DashboardModule,
          PlansModule,
        ]
      : [];
    return {
      module: AppModule,
      imports: [
        configModule,
        OpsModule.forRoot(roles),
        DatabaseModule,
        RedisModule,
        QueueModule,
        // Every role: the admin controllers of the webhooks and notifications modules (imported by every role)
        // declare AdminTokenGuard, whose failure limiter Nest resolves even in a worker that serves no HTTP.
        AdminAuthModule,
        ChainModule.forRoot(extensions.chain),
        WebhooksModule,
        NotificationsModule,
        // The requests module's read ports, which webhooks and notifications inject (an operator's resend reads
        // its request): in every role, a process with neither listener nor worker included (bench/webhook-producer.ts).
        RequestFactsModule,
        RatesModule.forRoot(extensions.rates),
        PlansCoreModule.forRoot(extensions.plans),
        ...http,
        ...(roles.worker ? [WorkerModule] : []),
      ],
      providers: [
        ...(roles.http
          ? [
              { provide: APP_PIPE, useClass: DtoPipe },
              { provide: APP_FILTER, useClass: ErrorFilter },
            ]
          : []),
      ],
    };
  }
}
