import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { schemaDrift } from '../../src/database/schema-drift';
import { testEnv } from '../support/test-env';

/** The run's database is migrated from the committed migrations (global setup); the entities must match it. */
describe('entities and migrated schema', () => {
  const options = () => ({ ...dataSourceOptions(testEnv().databaseUrl, 2) });

  it('agree exactly: the schema builder has nothing to change', async () => {
    expect(await schemaDrift(options())).toEqual([]);
  });

  it('disagree when an entity has a column no migration created', async () => {
    // The assets table as its entity declares it, plus one column that exists only in code.
    @Entity('assets')
    class AssetWithExtraColumn {
      @PrimaryColumn('numeric', { name: 'chain_id', precision: 78, scale: 0, primaryKeyConstraintName: 'assets_pkey' })
      chainId!: string;
      @PrimaryColumn('text', { name: 'token_address', primaryKeyConstraintName: 'assets_pkey' })
      tokenAddress!: string;
      @Column('text') symbol!: string;
      @Column('integer') decimals!: number;
      @Column('text', { nullable: true }) nickname!: string | null;
    }
    const drift = await schemaDrift({ ...options(), entities: [AssetWithExtraColumn] });
    expect(drift).toEqual([expect.stringMatching(/ALTER TABLE "assets" ADD "nickname" text/)]);
  });

  /*
   * The builder matches indexes by name and columns and check constraints by name only: an index's WHERE or
   * column order, or a check's expression, could differ from the migrations unseen. So the entities are also
   * built into an empty database (synchronize) and both schemas' definitions compared as Postgres prints them.
   */
  it('agree in index predicates and check expressions too: the same definitions as the entities build', async () => {
    const url = new URL(testEnv().databaseUrl);
    url.pathname = `${url.pathname}_entities`;
    const name = url.pathname.slice(1);
    const admin = async (sql: string) => {
      const c = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
      await c.connect();
      await c.query(sql).finally(() => c.end());
    };
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin(`CREATE DATABASE "${name}"`);
    try {
      const built = new DataSource(dataSourceOptions(url.toString(), 2));
      await built.initialize();
      const migrated = new DataSource(options());
      await migrated.initialize();
      try {
        await built.synchronize();
        const [fromEntities, fromMigrations] = [await definitions(built), await definitions(migrated)];
        const onlyIn = (a: string[], b: string[]) => a.filter((d) => !b.includes(d));
        // Not declarable in an entity: the expression index (the entity says synchronize: false).
        expect(onlyIn(fromMigrations, fromEntities)).toEqual([
          expect.stringMatching(/^plans_due CREATE INDEX plans_due ON public\.plans USING btree \(GREATEST\(next_charge_at, retry_at\)\)/),
        ]);
        expect(onlyIn(fromEntities, fromMigrations)).toEqual([]);
      } finally {
        await built.destroy();
        await migrated.destroy();
      }
    } finally {
      await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  });
});

/** Every index and constraint of the public tables (but TypeORM's migrations table), as Postgres prints it. */
async function definitions(ds: DataSource): Promise<string[]> {
  const rows: Array<{ d: string }> = await ds.query(`
    SELECT indexname || ' ' || indexdef AS d FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'migrations'
    UNION ALL
    SELECT c.relname || '.' || co.conname || ' ' || pg_get_constraintdef(co.oid)
      FROM pg_constraint co JOIN pg_class c ON c.oid = co.conrelid
     WHERE c.relnamespace = 'public'::regnamespace AND c.relname <> 'migrations'
    ORDER BY 1`);
  return rows.map((r) => r.d);
}
