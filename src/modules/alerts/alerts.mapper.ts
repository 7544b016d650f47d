import type { Alert } from './alert';
import type { AlertPage } from './alerts.service';

export function alertBody(a: Alert) {
  return { alert_id: a.id, kind: a.kind, request_id: a.requestId, details: a.details, created_at: a.createdAt.toISOString(),
    resolved_at: a.resolvedAt?.toISOString() ?? null };
}

export function alertPageBody(p: AlertPage) {
  return { alerts: p.alerts.map(alertBody), has_more: p.hasMore, limit: p.limit, offset: p.offset };
}
