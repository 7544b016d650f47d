import { DataSource, type DataSourceOptions } from 'typeorm';

/**
 * The statements TypeORM's schema builder would run to make the database match the entities: the same dry
 * run as `migration:generate`. Empty means the hand-reviewed migrations and the entity classes agree.
 */
export async function schemaDrift(options: DataSourceOptions): Promise<string[]> {
  const ds = new DataSource({ ...options, synchronize: false, migrationsRun: false });
  await ds.initialize();
  try {
    const log = await ds.driver.createSchemaBuilder().log();
    return log.upQueries.map((q) => q.query);
  } finally {
    await ds.destroy();
  }
}
