import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

/**
 * merchant_handles, owned by the merchants module. A retired handle keeps its row, so the primary key on the
 * handle refuses it to every other merchant forever (DESIGN §5: never reissued), except that a live merchant
 * takes over a test merchant's (MerchantHandleRepository.claim); one current handle per merchant.
 */
@Entity('merchant_handles')
@Check('merchant_handles_handle_check', `handle ~ '^[a-z][a-z0-9-]{1,18}[a-z0-9]$' AND position('--' in handle) = 0`)
@Index('merchant_handles_current', ['merchantId'], { unique: true, where: '(retired_at IS NULL)' })
export class MerchantHandleEntity {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'merchant_handles_pkey' })
  handle!: string;

  @Column('uuid', { name: 'merchant_id' })
  merchantId!: string;

  @ManyToOne('MerchantEntity', { nullable: false })
  @JoinColumn({ name: 'merchant_id', foreignKeyConstraintName: 'merchant_handles_merchant_id_fkey' })
  merchant?: unknown;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'retired_at', precision: 3, nullable: true })
  retiredAt!: Date | null;
}
