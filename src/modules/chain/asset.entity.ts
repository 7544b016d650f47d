import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintColumn } from '../../database/transformers';

/** Token metadata read from the contract, kept so a restart with the RPC down still knows decimals. */
@Entity('assets')
export class AssetEntity {
  @PrimaryColumn('numeric', { name: 'chain_id', precision: 78, scale: 0, transformer: bigintColumn, primaryKeyConstraintName: 'assets_pkey' })
  chainId!: bigint;

  @PrimaryColumn('text', { name: 'token_address', primaryKeyConstraintName: 'assets_pkey' })
  tokenAddress!: string;

  @Column('text')
  symbol!: string;

  @Column('integer')
  decimals!: number;
}
