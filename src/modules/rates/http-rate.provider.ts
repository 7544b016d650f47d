import type { RateProvider } from './rate-provider';

const DECIMAL = /^\d+(\.\d+)?$/;

/**
 * Rates from an HTTP JSON source: GET the URL, walk the dotted path (e.g. `data.rates`) to an object of
 * currency → number or decimal string. Anything malformed is refused whole, so a bad answer never replaces
 * good rates.
 */
export class HttpRateProvider implements RateProvider {
  readonly name: string;

  constructor(private readonly url: string, private readonly path: string, private readonly timeoutMs = 5000) {
    this.name = `http:${new URL(url).host}`;
  }

  async fetchRates(): Promise<Record<string, string>> {
    const res = await fetch(this.url, { signal: AbortSignal.timeout(this.timeoutMs), headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`rate source answered ${res.status}`);
    let node: unknown = await res.json();
    for (const key of this.path.split('.').filter(Boolean)) {
      node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
    }
    if (!node || typeof node !== 'object') throw new Error(`rate source has no object at "${this.path}"`);
    const rates: Record<string, string> = {};
    for (const [code, value] of Object.entries(node as Record<string, unknown>)) {
      // Numbers are taken by their shortest decimal text (JSON has no other), never computed with.
      const text = typeof value === 'number' ? String(value) : value;
      if (!/^[A-Za-z]{3}$/.test(code) || typeof text !== 'string' || !DECIMAL.test(text) || /^0+(\.0+)?$/.test(text)) {
        throw new Error(`rate source has a malformed entry ${code}: ${JSON.stringify(value)}`);
      }
      rates[code.toLowerCase()] = text;
    }
    if (Object.keys(rates).length === 0) throw new Error('rate source returned no rates');
    return rates;
  }
}
