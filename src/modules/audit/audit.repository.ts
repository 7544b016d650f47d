import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import type { AuditAction, AuditEvent } from './audit';
import { AuditEventEntity } from './audit-event.entity';

/** audit_events: the only place that reads or writes it. Rows are only ever inserted. */
@Injectable()
export class AuditRepository {
  constructor(@InjectRepository(AuditEventEntity) private readonly events: Repository<AuditEventEntity>) {}

  /** In the caller's transaction, so the row commits (or rolls back) with the change it records. */
  async insert(em: EntityManager, e: Omit<AuditEvent, 'id' | 'at'>): Promise<void> {
    await em.query(
      `INSERT INTO audit_events (actor_kind, actor_id, client_address, partner_id, action, target_id, details)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [e.actorKind, e.actorId, e.clientAddress, e.partnerId, e.action, e.targetId, JSON.stringify(e.details)],
    );
  }

  /** The client addresses portal user `userId` signed in from since `since`, newest first, at most `limit`. */
  async signInAddresses(userId: string, since: Date, limit: number): Promise<string[]> {
    const rows = await this.events.query<Array<{ client_address: string }>>(
      `SELECT client_address FROM audit_events
        WHERE target_id = $1 AND action = 'portal_user.signed_in' AND at >= $2 AND client_address IS NOT NULL
        ORDER BY at DESC LIMIT $3`,
      [userId, since, limit],
    );
    return rows.map((r) => r.client_address);
  }

  /** Newest first; `limit + 1` rows tell the caller whether more exist. */
  async list(f: { partnerId?: string; action?: AuditAction; since?: Date; limit: number; offset: number }): Promise<AuditEvent[]> {
    const q = this.events.createQueryBuilder('e');
    if (f.partnerId) q.andWhere('e.partner_id = :partnerId', { partnerId: f.partnerId });
    if (f.action) q.andWhere('e.action = :action', { action: f.action });
    if (f.since) q.andWhere('e.at >= :since', { since: f.since });
    const rows = await q.orderBy('e.at', 'DESC').addOrderBy('e.id', 'DESC').limit(f.limit).offset(f.offset).getMany();
    return rows.map((r) => ({
      id: r.id,
      at: r.at,
      actorKind: r.actorKind,
      actorId: r.actorId,
      clientAddress: r.clientAddress,
      partnerId: r.partnerId,
      action: r.action,
      targetId: r.targetId,
      details: r.details,
    }));
  }
}
