import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { PAGE_DEFAULT } from '../../common/paging';
import type { Alert, AlertKind, NewAlert } from './alert';
import { AlertsRepository } from './alerts.repository';
import type { ListAlertsQuery } from './alerts.dto';

/** Open alerts resolveWhere reads at a time. */
const OPEN_PAGE = 1000;

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

  /**
   * Resolves every open alert of `kind` whose request `closed` picks (it gets a page of request ids and
   * answers those whose condition is over), page by page of OPEN_PAGE: however many alerts stay open, none
   * waits behind them. Returns the request ids resolved.
   */
  async resolveWhere(kind: AlertKind, closed: (requestIds: string[]) => Promise<string[]>): Promise<string[]> {
    const resolved: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.repo.openPage(kind, OPEN_PAGE, after);
      if (page.length === 0) return resolved;
      resolved.push(...(await this.repo.resolve(kind, await closed(page.map((a) => a.requestId)))));
      if (page.length < OPEN_PAGE) return resolved;
      after = page[page.length - 1].id;
    }
  }

  async list(q: ListAlertsQuery): Promise<AlertPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const rows = await this.repo.list({ kind: q.kind, requestId: q.request_id, open: q.open, limit: limit + 1, offset });
    return { alerts: rows.slice(0, limit), hasMore: rows.length > limit, limit, offset };
  }
}
