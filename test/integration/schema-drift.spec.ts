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
});
