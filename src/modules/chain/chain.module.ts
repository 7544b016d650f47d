import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AssetRegistry, CHAIN_READERS, type ChainReaderFactory } from './asset-registry';
import { AssetEntity } from './asset.entity';
import { AssetRepository } from './asset.repository';
import { EthersChainReader } from './ethers-chain-reader';

/** The chain boundary: one ChainReader per mode (replaceable by providing CHAIN_READERS) and the assets. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([AssetEntity])],
  providers: [
    {
      provide: CHAIN_READERS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): ChainReaderFactory => (_mode, chain) =>
        new EthersChainReader(chain.rpcUrl, config.chainRpcTimeoutMs),
    },
    AssetRepository,
    AssetRegistry,
  ],
  exports: [AssetRegistry],
})
export class ChainModule {}
