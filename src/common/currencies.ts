/**
 * ISO 4217 minor-unit exponents. Every code Node's ICU knows is accepted; ISO's exponent is 2 unless listed
 * here (ICU's display digits differ from ISO for some codes, e.g. IQD, so ICU's are not used).
 */
const EXPONENT_EXCEPTIONS: Record<string, number> = {
  bif: 0, clp: 0, djf: 0, gnf: 0, isk: 0, jpy: 0, kmf: 0, krw: 0, pyg: 0, rwf: 0, ugx: 0, uyi: 0,
  vnd: 0, vuv: 0, xaf: 0, xof: 0, xpf: 0,
  bhd: 3, iqd: 3, jod: 3, kwd: 3, lyd: 3, omr: 3, tnd: 3,
  clf: 4, uyw: 4,
};

const KNOWN = new Set(Intl.supportedValuesOf('currency').map((c) => c.toLowerCase()));

/** Lower-case code, or null when it is not an ISO 4217 currency. Accepts any case (DESIGN §3). */
export function normalizeCurrency(code: string): string | null {
  if (typeof code !== 'string' || !/^[A-Za-z]{3}$/.test(code)) return null;
  const c = code.toLowerCase();
  return KNOWN.has(c) ? c : null;
}

export function fiatExponent(code: string): number {
  return EXPONENT_EXCEPTIONS[code.toLowerCase()] ?? 2;
}
