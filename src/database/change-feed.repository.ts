import { Injectable } from '@nestjs/common';
import type { Client } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';

/** The Postgres channel every instance listens on; payloads are JSON changes (ChangeFeed). */
export const CHANGE_CHANNEL = 'prs_changes';

/**
 * The channel only `instance` listens on, besides CHANGE_CHANNEL: its own heartbeats and the confirmations of
 * its changes travel there, so no instance receives the others' (what each instance receives grows with the
 * number of instances, not with its square; Postgres still wakes every listener on each NOTIFY to check).
 * Notifications of every channel reach a listener in commit order (Postgres keeps one queue), which is what
 * a heartbeat heard back proves.
 */
export const replyChannel = (instance: string) => `${CHANGE_CHANNEL}_${instance}`;

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

  /** Listens on `client` to `channels`, then names its connection so other instances can find it (listeners()). */
  async listen(client: Client, name: string, channels: string[]): Promise<void> {
    for (const channel of channels) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    await client.query('SELECT set_config($1, $2, false)', ['application_name', name]);
  }

  /** A notification sent on the listening connection itself (heartbeats and confirmations). */
  async notifyOn(client: Client, channel: string, payload: string): Promise<void> {
    await client.query('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  /** The application_names, starting with `prefix`, of the connections listening on this database now. */
  async listeners(prefix: string): Promise<string[]> {
    const rows: Array<{ name: string }> = await this.dataSource.query(
      `SELECT application_name AS name FROM pg_stat_activity WHERE datname = current_database() AND starts_with(application_name, $1)`,
      [prefix],
    );
    return rows.map((r) => r.name);
  }
}
