import { MigrationInterface, QueryRunner } from 'typeorm';

/** Current fiat-per-token rates, the system of record every API instance caches from. */
export class Rates1764000000001 implements MigrationInterface {
  name = 'Rates1764000000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE rates (
        currency text PRIMARY KEY CHECK (currency ~ '^[a-z]{3}$'),
        rate numeric NOT NULL CHECK (rate > 0),
        source text NOT NULL,
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE rates`);
  }
}
