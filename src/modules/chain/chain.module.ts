import { Global, Module } from '@nestjs/common';
import { AssetRegistry, CHAIN_READERS, type ChainReaderFactory } from './asset-registry';
import { EthersChainReader } from './ethers-chain-reader';

const ethersReaders: ChainReaderFactory = (_mode, chain) => new EthersChainReader(chain.rpcUrl);

/** The chain boundary: one ChainReader per mode (replaceable by providing CHAIN_READERS) and the assets. */
@Global()
@Module({
  providers: [{ provide: CHAIN_READERS, useValue: ethersReaders }, AssetRegistry],
  exports: [AssetRegistry],
})
export class ChainModule {}
