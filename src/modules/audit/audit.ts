import { createHash } from 'node:crypto';
import { isCheckViolation } from '../../database/pg-errors';

/**
 * The fixed vocabulary of audited changes (the audit_events_action_check constraint lists the same), and
 * two acts that change no row of ours but decide who can: a portal user's sign-in, an operator's action on
 * the queue board.
 */
export const AUDIT_ACTIONS = [
  'partner.created',
  'partner.updated',
  'key.issued',
  'key.revoked',
  'merchant.disabled',
  'merchant.enabled',
  'webhook.updated',
  'webhook.secret_rotated',
  'webhook.rotation_confirmed',
  'delivery.redelivered',
  'rates.refreshed',
  'portal_user.added',
  'portal_user.removed',
  'portal_user.role_changed',
  'portal_user.password_changed',
  'portal_user.signed_in',
  'queue_board.action',
  'notification.resent',
  'merchant.wallet_released',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Who made a change. The admin token is shared by every operator, so an admin is told apart only by the
 * client address (Express' req.ip: TRUST_PROXY decides whether that is the socket or the forwarded client).
 */
export type Actor =
  | { kind: 'admin'; address: string | null }
  | { kind: 'portal_user'; userId: string; partnerId: string; address: string | null }
  /** The service, by a rule, on someone else's act (a live wallet proof releasing a test merchant's claim). */
  | { kind: 'system'; address: null };

export const SYSTEM_ACTOR: Actor = { kind: 'system', address: null };

/**
 * A change a portal user made after they were removed from the partner: their audit row's insert refused it
 * (trigger audit_events_actor_present, migration 1764000402800), and the change rolled back with it.
 */
export function actorGone(e: unknown): boolean {
  return isCheckViolation(e, 'audit_events_actor_present');
}

/**
 * One change to record. `details` says what changed, as plain JSON, and NEVER holds a secret: no webhook
 * secret, API key, key hash, session token or password (hash) — whoever reads the trail must not gain access.
 */
export interface AuditEntry {
  partnerId: string | null;
  action: AuditAction;
  targetId: string | null;
  details?: Record<string, unknown>;
}

export interface AuditEvent {
  id: string;
  at: Date;
  actorKind: Actor['kind'];
  actorId: string | null;
  clientAddress: string | null;
  partnerId: string | null;
  action: AuditAction;
  targetId: string | null;
  details: Record<string, unknown>;
}

/**
 * A webhook URL as the trail shows it: scheme, host and port, and its path only as a digest (`/<sha256:…>`,
 * the first 12 hex digits: enough to tell two paths apart). Receivers often carry a token in the path (Slack,
 * Discord) as well as in the query or user info, and the trail cannot be deleted; none of them is kept.
 */
export function auditUrl(raw: string | null): string | null {
  if (raw === null) return null;
  try {
    const u = new URL(raw);
    const path = u.pathname === '/' ? '' : `/<sha256:${createHash('sha256').update(u.pathname).digest('hex').slice(0, 12)}>`;
    return `${u.protocol}//${u.host}${path}`;
  } catch {
    return null;
  }
}
