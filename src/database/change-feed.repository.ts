import { Injectable } from '@nestjs/common';
import type { Client } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';

/** The Postgres channel every instance listens on; payloads are JSON `{ topic, key }`. */
export const CHANGE_CHANNEL = 'prs_changes';

/** The SQL of the change feed: NOTIFY through TypeORM (inside the caller's transaction), LISTEN on a dedicated client. */
@Injectable()
export class ChangeFeedRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Queued by Postgres and delivered to listeners when (and only if) the surrounding transaction commits. */
  async notify(payload: string, em?: EntityManager): Promise<void> {
    await (em ?? this.dataSource.manager).query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, payload]);
  }

  /** A transaction on the app's DataSource, for a change whose notification must go out with it. */
  transaction<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  async listen(client: Client): Promise<void> {
    await client.query(`LISTEN ${CHANGE_CHANNEL}`);
  }
}
