import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AssetRegistry, CHAIN_READERS, type ChainReaderFactory } from './asset-registry';
import { EthersChainReader } from './ethers-chain-reader';

/** The chain boundary: one ChainReader per mode (replaceable by providing CHAIN_READERS) and the assets. */
@Global()
@Module({
  providers: [
    {
      provide: CHAIN_READERS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): ChainReaderFactory => (_mode, chain) =>
        new EthersChainReader(chain.rpcUrl, config.chainRpcTimeoutMs),
    },
    AssetRegistry,
  ],
  exports: [AssetRegistry],
})
export class ChainModule {}
