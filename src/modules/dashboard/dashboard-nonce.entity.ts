import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** dashboard_nonces: Sign-In with Ethereum nonces handed out and not used yet (single use, 10 minutes). */
@Entity('dashboard_nonces')
@Index('dashboard_nonces_expiry', ['expiresAt'])
export class DashboardNonceEntity {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'dashboard_nonces_pkey' })
  nonce!: string;

  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 })
  expiresAt!: Date;
}
