import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { ChangeFeed } from './change-feed';
import { ChangeFeedRepository } from './change-feed.repository';
import { dataSourceOptions, POOL_ACQUIRE_TIMEOUT_MS } from './data-source';

/**
 * The one DataSource of the app, from the validated config (TypeOrmModule closes it at shutdown). Modules
 * register their own entities with TypeOrmModule.forFeature and inject their repositories.
 */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config.databaseUrl, config.databasePoolSize, POOL_ACQUIRE_TIMEOUT_MS, config.databaseQueryTimeoutMs),
        retryAttempts: 0,
      }),
    }),
  ],
  providers: [ChangeFeedRepository, ChangeFeed],
  exports: [ChangeFeed],
})
export class DatabaseModule {}
