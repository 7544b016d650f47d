import { Check, Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { AuditAction } from './audit';

/**
 * audit_events, owned by the audit module: append-only (the migration's triggers refuse UPDATE, DELETE, TRUNCATE).
 * A portal user's row inserts only while that user is still the partner's (trigger audit_events_actor_present,
 * migration 1764000402800). Triggers are outside what an entity declares, so the drift check does not see them.
 */
@Entity('audit_events')
@Check(
  'audit_events_actor_check',
  `(actor_kind = 'admin' AND actor_id IS NULL) OR (actor_kind = 'portal_user' AND actor_id IS NOT NULL AND partner_id IS NOT NULL)
   OR (actor_kind = 'system' AND actor_id IS NULL)`,
)
@Check(
  'audit_events_action_check',
  `action IN (
          'partner.created', 'partner.updated', 'key.issued', 'key.revoked', 'merchant.disabled', 'merchant.enabled',
          'webhook.updated', 'webhook.secret_rotated', 'webhook.rotation_confirmed', 'delivery.redelivered',
          'rates.refreshed', 'portal_user.added', 'portal_user.removed', 'portal_user.role_changed',
          'portal_user.password_changed', 'portal_user.signed_in', 'queue_board.action', 'notification.resent',
          'merchant.wallet_released')`,
)
@Index('audit_events_at', ['at', 'id'])
@Index('audit_events_partner_at', ['partnerId', 'at', 'id'])
@Index('audit_events_sign_ins', ['targetId', 'at'], { where: `(action = 'portal_user.signed_in'::text)` })
export class AuditEventEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'audit_events_pkey' })
  id!: string;

  @Column('timestamp with time zone', { precision: 3, default: () => 'now()' })
  at!: Date;

  @Column('text', { name: 'actor_kind' })
  actorKind!: 'admin' | 'portal_user' | 'system';

  @Column('uuid', { name: 'actor_id', nullable: true })
  actorId!: string | null;

  @Column('text', { name: 'client_address', nullable: true })
  clientAddress!: string | null;

  @Column('uuid', { name: 'partner_id', nullable: true })
  partnerId!: string | null;

  @Column('text')
  action!: AuditAction;

  @Column('uuid', { name: 'target_id', nullable: true })
  targetId!: string | null;

  @Column('jsonb', { default: () => `'{}'` })
  details!: Record<string, unknown>;
}
