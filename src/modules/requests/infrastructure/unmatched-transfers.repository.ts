import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { ChainTransfer } from '../../chain/chain-reader';
import { UnmatchedTransferEntity } from './unmatched-transfer.entity';

/** A transfer as the scan keeps it (its block hash is not kept: a retry re-reads the receipt anyway). */
export type SeenTransfer = Omit<ChainTransfer, 'blockHash'>;

/** A transfer the scan could not decide yet, and the request it may pay. */
export interface UndecidedTransfer {
  transfer: SeenTransfer;
  requestId: string;
}

/**
 * unmatched_transfers: transfers to merchant wallets that paid nothing, for operators, and transfers the scan
 * could not decide yet (pending_request_id set), which it retries.
 */
@Injectable()
export class UnmatchedTransfersRepository {
  constructor(@InjectRepository(UnmatchedTransferEntity) private readonly transfers: Repository<UnmatchedTransferEntity>) {}

  /**
   * Seen again (a re-read range, a retry), the transfer keeps one row with the latest reason; `pendingRequestId`
   * only while it is undecided.
   */
  async record(chainId: bigint, t: SeenTransfer, reason: string, pendingRequestId: string | null = null): Promise<void> {
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
        pendingRequestId,
      })
      .orUpdate(['reason', 'pending_request_id'], ['chain_id', 'tx_hash', 'log_index'])
      .updateEntity(false)
      .execute();
  }

  /** A transfer that paid a request is not unmatched: the row kept while it was undecided goes. */
  async forget(chainId: bigint, t: SeenTransfer): Promise<void> {
    await this.transfers.delete({ chainId, txHash: t.txHash, logIndex: t.logIndex });
  }

  /** The oldest undecided transfers of one asset. */
  async undecided(chainId: bigint, token: string, limit: number): Promise<UndecidedTransfer[]> {
    const rows = await this.transfers
      .createQueryBuilder('u')
      .where('u.pending_request_id IS NOT NULL AND u.chain_id = :chainId AND u.token_address = :token', { chainId: chainId.toString(), token })
      .orderBy('u.id')
      .limit(limit)
      .getMany();
    return rows.map((u) => ({
      requestId: u.pendingRequestId!,
      transfer: {
        txHash: u.txHash,
        logIndex: u.logIndex,
        blockNumber: Number(u.blockNumber),
        token: u.tokenAddress,
        from: u.fromAddress,
        to: u.toAddress,
        value: u.value,
      },
    }));
  }
}
