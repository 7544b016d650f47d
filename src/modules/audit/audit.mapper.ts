import type { AuditEvent } from './audit';
import type { AuditPage } from './audit.service';

export function auditEventBody(e: AuditEvent) {
  return {
    event_id: e.id,
    at: e.at.toISOString(),
    actor: { kind: e.actorKind, id: e.actorId, address: e.clientAddress },
    partner_id: e.partnerId,
    action: e.action,
    target_id: e.targetId,
    details: e.details,
  };
}

export function auditPageBody(p: AuditPage) {
  return { events: p.events.map(auditEventBody), has_more: p.hasMore, limit: p.limit, offset: p.offset };
}
