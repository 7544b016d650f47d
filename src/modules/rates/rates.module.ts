import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { HttpRateProvider } from './http-rate.provider';
import { RATE_PROVIDER } from './rate-provider';
import { RateEntity } from './rate.entity';
import { RateRepository } from './rate.repository';
import { RatesService } from './rates.service';
import { StaticRateProvider } from './static-rate.provider';

/** Rates: the provider port (static RATES, or an HTTP JSON source when RATES_SOURCE_URL is set). */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([RateEntity])],
  providers: [
    {
      provide: RATE_PROVIDER,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        config.ratesSourceUrl
          ? new HttpRateProvider(config.ratesSourceUrl, config.ratesSourcePath)
          : new StaticRateProvider(config.rates),
    },
    RateRepository,
    RatesService,
  ],
  exports: [RatesService],
})
export class RatesModule {}
