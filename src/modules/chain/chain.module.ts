import { ConfigurableModuleBuilder, Global, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AssetRegistry, CHAIN_READERS, type ChainReaderFactory } from './asset-registry';
import { AssetEntity } from './asset.entity';
import { AssetRepository } from './asset.repository';
import { EthersChainReader } from './ethers-chain-reader';
import { SiweVerifier } from './siwe-verifier.service';

export interface ChainModuleOptions {
  /** Builds the reader of each configured mode; the default reads JSON-RPC through ethers. */
  readerFactory?: ChainReaderFactory;
}

const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<ChainModuleOptions>()
  .setClassMethodName('forRoot')
  .build();

/** The chain boundary: one ChainReader per mode (from `forRoot({ readerFactory })`) the assets, and the
 * Sign-In with Ethereum check that onboarding and the dashboard share. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([AssetEntity])],
  providers: [
    {
      provide: CHAIN_READERS,
      inject: [APP_CONFIG, MODULE_OPTIONS_TOKEN],
      useFactory: (config: AppConfig, options: ChainModuleOptions): ChainReaderFactory =>
        options.readerFactory ?? ((_mode, chain) => new EthersChainReader(chain.rpcUrl, config.chainRpcTimeoutMs)),
    },
    AssetRepository,
    AssetRegistry,
    SiweVerifier,
  ],
  exports: [AssetRegistry, SiweVerifier],
})
export class ChainModule extends ConfigurableModuleClass {
  static override forRoot(options: ChainModuleOptions = {}): DynamicModule {
    return super.forRoot(options);
  }
}
