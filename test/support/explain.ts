import { DataSource, type Logger } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/**
 * A one-connection DataSource that keeps every statement its repositories send, so a test can explain exactly
 * what a repository method ran (with its parameters) rather than a copy of its SQL.
 */
export class ExplainingDataSource {
  private captured: Array<{ query: string; parameters: unknown[] }> = [];
  readonly ds: DataSource;

  constructor(databaseUrl: string) {
    const capture: Logger = {
      logQuery: (query, parameters) => void this.captured.push({ query, parameters: (parameters ?? []) as unknown[] }),
      logQueryError: () => undefined,
      logQuerySlow: () => undefined,
      logSchemaBuild: () => undefined,
      logMigration: () => undefined,
      log: () => undefined,
    };
    this.ds = new DataSource({ ...dataSourceOptions(databaseUrl, 1), logger: capture });
  }

  async initialize(): Promise<this> {
    await this.ds.initialize();
    return this;
  }

  destroy(): Promise<void> {
    return this.ds.isInitialized ? this.ds.destroy() : Promise.resolve();
  }

  /**
   * Runs `run`, then explains each statement it sent (transaction control and SET left out; a statement after
   * SET LOCAL is explained under those settings, as it ran): for each statement that
   * reads `table`, how each of its scans of it finds rows (the index, or 'Seq Scan'; a bitmap scan by the
   * indexes under it), and with `analyze` (statements that only read) the rows those scans read, per
   * statement and in all.
   */
  async scansOf(
    table: string, run: () => Promise<unknown>, opts: { analyze?: boolean } = {},
  ): Promise<{ indexes: string[][]; rowsRead: number; rowsReadEach: number[] }> {
    this.captured = [];
    await run();
    // Each statement with the SET LOCALs sent before it in its transaction, replayed around its EXPLAIN.
    const statements: Array<{ query: string; parameters: unknown[]; settings: string[] }> = [];
    let settings: string[] = [];
    for (const c of this.captured) {
      if (/^(START TRANSACTION|BEGIN|COMMIT|ROLLBACK)/i.test(c.query)) settings = [];
      else if (/^SET LOCAL /i.test(c.query)) settings.push(c.query);
      else if (!/^(SAVEPOINT|RELEASE|SET )/i.test(c.query)) statements.push({ ...c, settings });
    }
    if (statements.length === 0) throw new Error('the call sent no statement');
    const indexes: string[][] = [];
    const rowsReadEach: number[] = [];
    for (const { query, parameters, settings: set } of statements) {
      const [row] = await this.ds.transaction(async (em) => {
        for (const setting of set) await em.query(setting);
        return em.query<Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>>(
          `EXPLAIN (FORMAT JSON${opts.analyze ? ', ANALYZE' : ''}) ${query}`, parameters,
        );
      });
      const scans: string[] = [];
      let rowsRead = 0;
      const walk = (n: PlanNode): void => {
        if (n['Relation Name'] === table && n['Node Type'] !== 'ModifyTable') {
          const under = (m: PlanNode): string[] => [...(m['Index Name'] ? [m['Index Name']] : []), ...(m.Plans ?? []).flatMap(under)];
          scans.push(n['Node Type'] === 'Bitmap Heap Scan' ? under(n).join('+') : n['Index Name'] ?? n['Node Type']);
          const perLoop = (n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0);
          rowsRead += perLoop * (n['Actual Loops'] ?? 1);
        }
        (n.Plans ?? []).forEach(walk);
      };
      walk(row['QUERY PLAN'][0].Plan);
      if (scans.length) {
        indexes.push(scans);
        rowsReadEach.push(rowsRead);
      }
    }
    return { indexes, rowsRead: rowsReadEach.reduce((a, b) => a + b, 0), rowsReadEach };
  }
}
