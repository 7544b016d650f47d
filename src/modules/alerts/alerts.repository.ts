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
}

/** alerts: the only place that reads or writes it. */
@Injectable()
export class AlertsRepository {
  constructor(@InjectRepository(AlertEntity) private readonly alerts: Repository<AlertEntity>) {}

  /**
   * Stores an alert in the caller's transaction. Returns null when this request already has an alert of
   * this kind (the unique index): a second worker reaching the same conclusion adds nothing.
   */
  async insert(em: EntityManager, a: NewAlert): Promise<Alert | null> {
    const rows = await em.query<AlertRow[]>(
      `INSERT INTO alerts (kind, request_id, details) VALUES ($1, $2, $3)
       ON CONFLICT DO NOTHING RETURNING id, kind, request_id, details, created_at`,
      [a.kind, a.requestId, JSON.stringify(a.details)],
    );
    const [row] = rows;
    return row ? { id: row.id, kind: row.kind, requestId: row.request_id, details: row.details, createdAt: row.created_at } : null;
  }

  /** Newest first; `limit + 1` rows tell the caller whether more exist. */
  async list(f: { kind?: AlertKind; requestId?: string; limit: number; offset: number }): Promise<Alert[]> {
    const q = this.alerts.createQueryBuilder('a');
    if (f.kind) q.andWhere('a.kind = :kind', { kind: f.kind });
    if (f.requestId) q.andWhere('a.request_id = :requestId', { requestId: f.requestId });
    const rows = await q.orderBy('a.created_at', 'DESC').addOrderBy('a.id', 'DESC').limit(f.limit).offset(f.offset).getMany();
    return rows.map((e) => ({ id: e.id, kind: e.kind, requestId: e.requestId, details: e.details, createdAt: e.createdAt }));
  }
}
