import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { ChangeFeed } from './change-feed';
import { ChangeFeedRepository } from './change-feed.repository';
import { dataSourceOptions } from './data-source';
import { Db } from './db';

/**
 * The one DataSource of the app, from the validated config (TypeOrmModule closes it at shutdown). Modules
 * register their own entities with TypeOrmModule.forFeature and inject their repositories.
 */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({ ...dataSourceOptions(config.databaseUrl), retryAttempts: 0 }),
    }),
  ],
  // Db: legacy raw-SQL access, kept only until every module reads through its repositories.
  providers: [ChangeFeedRepository, ChangeFeed, { provide: Db, inject: [DataSource], useFactory: (ds: DataSource) => new Db(ds) }],
  exports: [ChangeFeed, Db],
})
export class DatabaseModule {}
