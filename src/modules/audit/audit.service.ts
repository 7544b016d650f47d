import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { PAGE_DEFAULT } from '../../common/paging';
import type { Actor, AuditAction, AuditEntry, AuditEvent } from './audit';
import { AuditRepository } from './audit.repository';

export interface AuditPage {
  events: AuditEvent[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

/**
 * The audit trail: the modules that make operator and portal changes record each one here, with the
 * EntityManager of the change's own transaction (a change never lands without its row, a failed one leaves
 * none); the admin API and the portal list it.
 */
@Injectable()
export class AuditService {
  constructor(private readonly repo: AuditRepository) {}

  record(em: EntityManager, actor: Actor, entry: AuditEntry): Promise<void> {
    return this.repo.insert(em, {
      actorKind: actor.kind,
      actorId: actor.kind === 'portal_user' ? actor.userId : null,
      clientAddress: actor.address,
      partnerId: entry.partnerId,
      action: entry.action,
      targetId: entry.targetId,
      details: entry.details ?? {},
    });
  }

  /** The client addresses portal user `userId` signed in from since `since`, newest first, at most `limit`. */
  signInAddresses(userId: string, since: Date, limit: number): Promise<string[]> {
    return this.repo.signInAddresses(userId, since, limit);
  }

  async list(f: { partnerId?: string; action?: AuditAction; since?: Date; limit?: number; offset?: number }): Promise<AuditPage> {
    const limit = f.limit ?? PAGE_DEFAULT;
    const offset = f.offset ?? 0;
    const rows = await this.repo.list({ partnerId: f.partnerId, action: f.action, since: f.since, limit: limit + 1, offset });
    return { events: rows.slice(0, limit), hasMore: rows.length > limit, limit, offset };
  }
}
