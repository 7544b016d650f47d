import type { RateProvider } from './rate-provider';

/** The rates of the RATES variable. */
export class StaticRateProvider implements RateProvider {
  readonly name = 'static';
  constructor(private readonly rates: Record<string, string>) {}

  async fetchRates(): Promise<Record<string, string>> {
    return { ...this.rates };
  }
}
