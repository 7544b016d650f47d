import { Column, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { bigintColumn } from '../../../database/transformers';

/**
 * Transfers the chain scan saw to a merchant wallet that paid nothing: kept for operators. A transfer whose
 * verification could not be decided yet is kept too, with the request it may pay, and retried.
 */
@Entity('unmatched_transfers')
@Index('unmatched_transfers_pending', ['pendingRequestId'], { where: '(pending_request_id IS NOT NULL)' })
@Index('unmatched_transfers_retry', ['chainId', 'tokenAddress', 'retryAt'], { where: '(pending_request_id IS NOT NULL)' })
@Unique('unmatched_transfers_chain_id_tx_hash_log_index_key', ['chainId', 'txHash', 'logIndex'])
export class UnmatchedTransferEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'unmatched_transfers_pkey' })
  id!: string;

  @Column('numeric', { name: 'chain_id', precision: 78, scale: 0, transformer: bigintColumn })
  chainId!: bigint;

  @Column('text', { name: 'tx_hash' })
  txHash!: string;

  @Column('integer', { name: 'log_index' })
  logIndex!: number;

  @Column('bigint', { name: 'block_number', transformer: bigintColumn })
  blockNumber!: bigint;

  /** The block it was seen in (null on rows from before it was kept). */
  @Column('text', { name: 'block_hash', nullable: true })
  blockHash!: string | null;

  @Column('text', { name: 'token_address' })
  tokenAddress!: string;

  @Column('text', { name: 'from_address' })
  fromAddress!: string;

  @Column('text', { name: 'to_address' })
  toAddress!: string;

  @Column('numeric', { precision: 78, scale: 0, transformer: bigintColumn })
  value!: bigint;

  @Column('text')
  reason!: string;

  /** Set while undecided: the request the scan matched it to, retried until it pays or is refused. */
  @Column('uuid', { name: 'pending_request_id', nullable: true })
  pendingRequestId!: string | null;

  /** While undecided: tries so far (the back-off grows with them). */
  @Column('integer', { default: 0 })
  retries!: number;

  /** While undecided: its next try. Retries take the earliest first, so none is starved. */
  @Column('timestamp with time zone', { name: 'retry_at', precision: 3, default: () => 'now()' })
  retryAt!: Date;

  /** While it waits for a block: the tip at its last try; not tried again before the tip passes it. */
  @Column('bigint', { name: 'retry_tip', nullable: true, transformer: bigintColumn })
  retryTip!: bigint | null;

  /** While a retry round tries it: that round's lease; its decision is written only while the row still carries it. */
  @Column('uuid', { name: 'retry_lease', nullable: true })
  retryLease!: string | null;

  @Column('timestamp with time zone', { name: 'seen_at', precision: 3, default: () => 'now()' })
  seenAt!: Date;
}
