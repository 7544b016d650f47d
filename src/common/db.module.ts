import { Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { createDataSource } from '../database/data-source';
import { Db } from '../database/db';

@Injectable()
class DbLifecycle implements OnApplicationShutdown {
  constructor(private readonly db: Db) {}
  async onApplicationShutdown(): Promise<void> {
    if (this.db.dataSource.isInitialized) await this.db.dataSource.destroy();
  }
}

@Global()
@Module({
  providers: [
    {
      provide: Db,
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) => {
        const ds = createDataSource(config.databaseUrl);
        await ds.initialize();
        return new Db(ds);
      },
    },
    DbLifecycle,
  ],
  exports: [Db],
})
export class DbModule {}
