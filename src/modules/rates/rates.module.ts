import { ConfigurableModuleBuilder, Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AuditCoreModule } from '../audit/audit-core.module';
import { HttpRateProvider } from './http-rate.provider';
import { RATE_PROVIDER, type RateProvider } from './rate-provider';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RateEntity } from './rate.entity';
import { RateRepository } from './rate.repository';
import { RatesService } from './rates.service';
import { StaticRateProvider } from './static-rate.provider';

export interface RatesModuleOptions {
  /** Where rates come from; the default is RATES_SOURCE_URL when set, else the static RATES. */
  provider?: RateProvider;
}

const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<RatesModuleOptions>()
  .setClassMethodName('forRoot')
  .build();

/** Rates: the provider port (`forRoot({ provider })`, static RATES, or an HTTP JSON source) and the store. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([RateEntity]), AuditCoreModule],
  providers: [
    {
      provide: RATE_PROVIDER,
      inject: [APP_CONFIG, MODULE_OPTIONS_TOKEN],
      useFactory: (config: AppConfig, options: RatesModuleOptions): RateProvider =>
        options.provider ??
        (config.ratesSourceUrl
          ? new HttpRateProvider(config.ratesSourceUrl, config.ratesSourcePath)
          : new StaticRateProvider(config.rates)),
    },
    RateRepository,
    RatesService,
  ],
  exports: [RatesService],
})
export class RatesModule extends ConfigurableModuleClass {
  static override forRoot(options: RatesModuleOptions = {}): DynamicModule {
    return super.forRoot(options);
  }
}
