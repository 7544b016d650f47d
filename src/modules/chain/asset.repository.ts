import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { AssetEntity } from './asset.entity';

/** The assets table: token metadata as last read from each configured contract. */
@Injectable()
export class AssetRepository {
  constructor(@InjectRepository(AssetEntity) private readonly assets: Repository<AssetEntity>) {}

  async save(chainId: bigint, tokenAddress: string, symbol: string, decimals: number): Promise<void> {
    await this.assets.upsert({ chainId, tokenAddress, symbol, decimals }, ['chainId', 'tokenAddress']);
  }

  find(chainId: bigint, tokenAddress: string): Promise<AssetEntity | null> {
    return this.assets.findOneBy({ chainId, tokenAddress });
  }
}
