import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import type { Alert, AlertKind, NewAlert } from './alert';
import { AlertEntity } from './alert.entity';

interface AlertRow {
  id: string;
  kind: AlertKind;
  request_id: string | null;
  details: Record<string, unknown>;
  created_at: Date;
  resolved_at: Date | null;
}

const ALERT_COLUMNS = 'id, kind, request_id, details, created_at, resolved_at';

/** alerts: the only place that reads or writes it. */
@Injectable()
export class AlertsRepository {
  constructor(@InjectRepository(AlertEntity) private readonly alerts: Repository<AlertEntity>) {}

  /**
   * Stores an alert in the caller's transaction. Returns null when this request already has an open alert
   * of this kind (the partial unique index): a second worker reaching the same conclusion adds nothing.
   */
  async insert(em: EntityManager, a: NewAlert): Promise<Alert | null> {
    const rows = await em.query<AlertRow[]>(
      `INSERT INTO alerts (kind, request_id, details) VALUES ($1, $2, $3)
       ON CONFLICT DO NOTHING RETURNING ${ALERT_COLUMNS}`,
      [a.kind, a.requestId, JSON.stringify(a.details)],
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /** A page of the open alerts of `kind` (id and request), in id order after `afterId`, at most `limit`. */
  async openPage(kind: AlertKind, limit: number, afterId?: string): Promise<Array<{ id: string; requestId: string }>> {
    const rows = await this.alerts.query<Array<{ id: string; request_id: string }>>(
      `SELECT id, request_id FROM alerts WHERE kind = $1 AND resolved_at IS NULL AND request_id IS NOT NULL
          AND ($3::uuid IS NULL OR id > $3::uuid)
        ORDER BY id LIMIT $2`,
      [kind, limit, afterId ?? null],
    );
    return rows.map((r) => ({ id: r.id, requestId: r.request_id }));
  }

  /** Stamps the open alerts of `kind` of these requests resolved; returns the request ids it resolved. */
  async resolve(kind: AlertKind, requestIds: readonly string[]): Promise<string[]> {
    if (requestIds.length === 0) return [];
    const [rows] = await this.alerts.query<[Array<{ request_id: string }>, number]>(
      `UPDATE alerts SET resolved_at = now()
        WHERE kind = $1 AND request_id = ANY($2::uuid[]) AND resolved_at IS NULL
        RETURNING request_id`,
      [kind, requestIds],
    );
    return rows.map((r) => r.request_id);
  }

  /** Newest first; `limit + 1` rows tell the caller whether more exist. */
  async list(f: { kind?: AlertKind; requestId?: string; open?: boolean; limit: number; offset: number }): Promise<Alert[]> {
    const q = this.alerts.createQueryBuilder('a');
    if (f.kind) q.andWhere('a.kind = :kind', { kind: f.kind });
    if (f.requestId) q.andWhere('a.request_id = :requestId', { requestId: f.requestId });
    if (f.open !== undefined) q.andWhere(f.open ? 'a.resolved_at IS NULL' : 'a.resolved_at IS NOT NULL');
    const rows = await q.orderBy('a.created_at', 'DESC').addOrderBy('a.id', 'DESC').limit(f.limit).offset(f.offset).getMany();
    return rows.map((e) => ({ id: e.id, kind: e.kind, requestId: e.requestId, details: e.details, createdAt: e.createdAt, resolvedAt: e.resolvedAt }));
  }
}

function fromRow(r: AlertRow): Alert {
  return { id: r.id, kind: r.kind, requestId: r.request_id, details: r.details, createdAt: r.created_at, resolvedAt: r.resolved_at };
}
