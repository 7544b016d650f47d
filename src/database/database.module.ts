import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/config';
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
  // Legacy raw-SQL access, kept only until every module reads through its repositories.
  providers: [{ provide: Db, inject: [DataSource], useFactory: (ds: DataSource) => new Db(ds) }],
  exports: [Db],
})
export class DatabaseModule {}
