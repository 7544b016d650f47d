import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintColumn } from '../../../database/transformers';

/** How far the chain scan has read one asset's transfers (block and its time). */
@Entity('chain_cursors')
export class ChainCursorEntity {
  @PrimaryColumn('numeric', { name: 'chain_id', precision: 78, scale: 0, transformer: bigintColumn, primaryKeyConstraintName: 'chain_cursors_pkey' })
  chainId!: bigint;

  @PrimaryColumn('text', { name: 'token_address', primaryKeyConstraintName: 'chain_cursors_pkey' })
  tokenAddress!: string;

  @Column('bigint', { name: 'last_block', transformer: bigintColumn })
  lastBlock!: bigint;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;

  @Column('timestamp with time zone', { name: 'last_block_time', precision: 3, nullable: true })
  lastBlockTime!: Date | null;
}
