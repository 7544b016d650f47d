/**
 * "column is one of `wanted`", for statements that find their rows by key (id, id = ANY(…)), written as
 * "column is none of the other values" so that Postgres cannot read the rows through a partial index whose
 * predicate is a state test (`WHERE state = 'pending'` and the like).
 *
 * Postgres picks such an index from the statement's WHERE alone and costs it on the last ANALYZE. An outbox's
 * open rows are few when ANALYZE runs and pile up during an outage (Redis lost, an SMTP server or a partner
 * down); with `state = 'pending'` in the WHERE the planner then takes "scan the nearly empty partial index"
 * over "probe the primary key", and every statement reads the whole backlog: quadratic work exactly when the
 * service catches up (measured 2026-11-27: 17,571 webhook events read to claim 26, 4–8 ms a statement;
 * 30,000 pending notifications read to claim one). `NOT IN` the other values proves no partial predicate, so
 * the key is the only index left, whatever the statistics (test/integration/row-reads.spec.ts).
 *
 * `all` must be every value the column's check constraint allows, and the column NOT NULL; the result is
 * SQL text built from those constants, never from input.
 */
export function oneOf<T extends string>(column: string, wanted: readonly T[], all: readonly T[]): string {
  const others = all.filter((s) => !wanted.includes(s));
  if (others.length === 0) return 'true';
  return `${column} NOT IN (${others.map((s) => `'${s}'`).join(', ')})`;
}

/**
 * `column IN ('a','b')` from constants: a state column's check constraint as the migrations wrote it, or a state
 * test that a partial index's predicate is proven from even in a generic plan (a parameter is not).
 */
export function checkIn(column: string, values: readonly string[]): string {
  return `${column} IN (${values.map((s) => `'${s}'`).join(',')})`;
}
