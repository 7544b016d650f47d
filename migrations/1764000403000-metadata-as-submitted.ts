import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A request's and a plan's metadata are stored as `json` (its keys in the order sent), not `jsonb`, which re-sorts an
 * object's keys (shorter first, then by bytes). Spec §2.1 says metadata "round-trips unchanged" and §6.3 that
 * the webhook carries "exactly the metadata given at create": with `jsonb`, `{"zeta":"1","a":"2"}` came back
 * as `{"a":"2","zeta":"1"}` from the create, every read and every webhook (a spec audit's probe). Equal as
 * objects, but not as text, which a partner may compare, hash or snapshot. Nothing queries inside metadata,
 * and `json` has no equality operator, which nothing here needs (every UNION is UNION ALL).
 *
 * Rows stored before this keep the order `jsonb` gave them. Both tables are rewritten under an ACCESS
 * EXCLUSIVE lock, which blocks creates while it runs (15 s for a million requests, their 17 indexes rebuilt,
 * on the development machine): run it in a quiet window. A rewritten table has no visibility map, so every
 * index-only scan reads the heap until a VACUUM: the lists' lapsed branches took 450 ms at 10 million rows
 * instead of 0.5 (`npm run bench:lists`). Hence the VACUUM (ANALYZE) after the rewrite, outside the
 * rewrite's transaction (9 s at 10 million rows, blocking no writer).
 */
export class MetadataAsSubmitted1764000403000 implements MigrationInterface {
  name = 'MetadataAsSubmitted1764000403000';
  /** The rewrite runs in a transaction of its own, the VACUUM after it (VACUUM cannot run in one). */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await inOneTransaction(q, () => retype(q, 'json'));
    await vacuum(q);
  }

  async down(q: QueryRunner): Promise<void> {
    await inOneTransaction(q, () => retype(q, 'jsonb'));
    await vacuum(q);
  }
}

async function inOneTransaction(q: QueryRunner, work: () => Promise<void>): Promise<void> {
  await q.startTransaction();
  try {
    await work();
    await q.commitTransaction();
  } catch (e) {
    await q.rollbackTransaction();
    throw e;
  }
}

async function vacuum(q: QueryRunner): Promise<void> {
  for (const table of ['payment_requests', 'plans']) await q.query(`VACUUM (ANALYZE) ${table}`);
}

async function retype(q: QueryRunner, type: 'json' | 'jsonb'): Promise<void> {
  for (const table of ['payment_requests', 'plans']) {
    await q.query(`ALTER TABLE ${table} ALTER COLUMN metadata DROP DEFAULT`);
    await q.query(`ALTER TABLE ${table} ALTER COLUMN metadata TYPE ${type} USING metadata::${type}`);
    await q.query(`ALTER TABLE ${table} ALTER COLUMN metadata SET DEFAULT '{}'::${type}`);
  }
}
