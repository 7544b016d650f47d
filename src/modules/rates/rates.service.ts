import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';

/** Fiat units per one stablecoin, by lower-case currency code. Static from RATES for now. */
@Injectable()
export class RatesService {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  rate(currency: string): string | undefined {
    return this.config.rates[currency];
  }

  currencies(): string[] {
    return Object.keys(this.config.rates);
  }
}
