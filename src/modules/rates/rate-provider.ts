/** Where fiat-per-token rates come from. Replace it with `RatesModule.forRoot({ provider })` (docs/extending.md). */
export interface RateProvider {
  /** A name stored beside each rate, e.g. "static" or the source URL's host. */
  readonly name: string;
  /** Lower-case ISO 4217 code → fiat units per one token, as a positive decimal string. */
  fetchRates(): Promise<Record<string, string>>;
}

export const RATE_PROVIDER = Symbol('RATE_PROVIDER');

/**
 * A rate's source as partners see it (portal): `static` for RATES, `remote` for anything else, whose name may
 * be an internal host (`http:<host>:<port>`). Operators see the name itself (admin API, metrics, logs).
 */
export function sourceForPartners(name: string): 'static' | 'remote' {
  return name === 'static' ? 'static' : 'remote';
}
