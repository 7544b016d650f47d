import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { PAGE_DEFAULT } from '../../common/paging';
import type { Alert, AlertKind, NewAlert } from './alert';
import { AlertsRepository } from './alerts.repository';
import type { ListAlertsQuery } from './alerts.dto';

/** Open alerts one openRequestIds call reads at most. */
const OPEN_READ = 1000;

export interface AlertPage {
  alerts: Alert[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

/** Stored alerts for operators: other modules record them in their own transaction, the admin API lists them. */
@Injectable()
export class AlertsService {
  constructor(private readonly repo: AlertsRepository) {}

  /** Returns null when the same alert (kind, request) is already stored. */
  record(em: EntityManager, alert: NewAlert): Promise<Alert | null> {
    return this.repo.insert(em, alert);
  }

  /** The requests with an open alert of `kind` (the oldest OPEN_READ first: a next call reads the next ones once these are resolved). */
  openRequestIds(kind: AlertKind): Promise<string[]> {
    return this.repo.openRequestIds(kind, OPEN_READ);
  }

  /** Stamps resolved the open alerts of `kind` of these requests; returns the request ids it resolved. */
  resolve(kind: AlertKind, requestIds: readonly string[]): Promise<string[]> {
    return this.repo.resolve(kind, requestIds);
  }

  async list(q: ListAlertsQuery): Promise<AlertPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const rows = await this.repo.list({ kind: q.kind, requestId: q.request_id, open: q.open, limit: limit + 1, offset });
    return { alerts: rows.slice(0, limit), hasMore: rows.length > limit, limit, offset };
  }
}
