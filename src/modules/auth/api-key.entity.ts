import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';

/** api_keys, owned by the auth module. Only the SHA-256 of a key is stored. */
@Entity('api_keys')
@Unique('api_keys_key_hash_key', ['keyHash'])
@Check('api_keys_mode_check', `mode IN ('test','live')`)
@Index('api_keys_partner', ['partnerId'])
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'api_keys_pkey' })
  id!: string;

  @Column('uuid', { name: 'partner_id' })
  partnerId!: string;

  @ManyToOne('PartnerEntity', { nullable: false })
  @JoinColumn({ name: 'partner_id', foreignKeyConstraintName: 'api_keys_partner_id_fkey' })
  partner?: unknown;

  @Column('text')
  mode!: 'test' | 'live';

  @Column('text', { array: true })
  scopes!: string[];

  @Column('bytea', { name: 'key_hash' })
  keyHash!: Buffer;

  @Column('text', { name: 'display_prefix' })
  displayPrefix!: string;

  @Column('text', { nullable: true })
  label!: string | null;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'revoked_at', precision: 3, nullable: true })
  revokedAt!: Date | null;
}
