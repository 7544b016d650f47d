import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { ChainTransfer } from '../../chain/chain-reader';
import { UnmatchedTransferEntity } from './unmatched-transfer.entity';

/** unmatched_transfers: transfers to merchant wallets that paid nothing, for operators. */
@Injectable()
export class UnmatchedTransfersRepository {
  constructor(@InjectRepository(UnmatchedTransferEntity) private readonly transfers: Repository<UnmatchedTransferEntity>) {}

  /** Seen again (a re-read range), the transfer keeps one row with the latest reason. */
  async record(chainId: bigint, t: ChainTransfer, reason: string): Promise<void> {
    await this.transfers
      .createQueryBuilder()
      .insert()
      .values({
        chainId,
        txHash: t.txHash,
        logIndex: t.logIndex,
        blockNumber: BigInt(t.blockNumber),
        tokenAddress: t.token,
        fromAddress: t.from,
        toAddress: t.to,
        value: t.value,
        reason,
      })
      .orUpdate(['reason'], ['chain_id', 'tx_hash', 'log_index'])
      .updateEntity(false)
      .execute();
  }
}
