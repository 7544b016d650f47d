import { DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from './config/config';
import { DatabaseModule } from './database/database.module';
import { ErrorFilter } from './common/http/error.filter';
import { DtoPipe } from './common/http/validation';
import { QueueModule } from './common/queue/queue.module';
import { RedisModule } from './common/redis/redis.module';
import { RateLimitModule } from './common/rate-limit/rate-limit.module';
import { AdminModule } from './modules/admin/admin.module';
import { AuthModule } from './modules/auth/auth.module';
import { ChainModule } from './modules/chain/chain.module';
import { DocsModule } from './modules/docs/docs.module';
import { MerchantsModule } from './modules/merchants/merchants.module';
import { withOverrides } from './modules/ops/module-overrides';
import { OpsModule } from './modules/ops/ops.module';
import { PagesModule } from './modules/pages/pages.module';
import { PortalModule } from './modules/portal/portal.module';
import { RatesModule } from './modules/rates/rates.module';
import { RequestsModule } from './modules/requests/requests.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';
import { WorkerModule } from './worker.module';

export interface Roles {
  /** Serve HTTP: partner API, pages, admin. */
  http: boolean;
  /** Run the queue processors and repeating jobs. */
  worker: boolean;
}

@Module({})
class ConfigHolder {}

/** One module graph for both entry points; the roles decide what is mounted (DESIGN §1). */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, roles: Roles, overrides: Provider[] = []): DynamicModule {
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
          DocsModule,
          PortalModule,
        ]
      : [];
    // Overrides replace a provider where its module declares it (e.g. CHAIN_READERS in ChainModule).
    const { imports, rest } = withOverrides(
      [configModule, OpsModule.forRoot(roles), DatabaseModule, RedisModule, QueueModule, ChainModule, WebhooksModule, RatesModule, ...http, ...(roles.worker ? [WorkerModule] : [])],
      overrides,
    );
    return {
      module: AppModule,
      imports,
      providers: [
        ...(roles.http
          ? [
              { provide: APP_PIPE, useClass: DtoPipe },
              { provide: APP_FILTER, useClass: ErrorFilter },
            ]
          : []),
        ...rest,
      ],
    };
  }
}
