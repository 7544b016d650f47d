import { fiatExponent } from '../../common/currencies';

/** Minor units as an exact decimal string: 1234 with exponent 2 → "12.34". */
function decimalString(minor: bigint, exponent: number): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(exponent + 1, '0');
  const whole = digits.slice(0, digits.length - exponent);
  const fraction = exponent > 0 ? `.${digits.slice(digits.length - exponent)}` : '';
  return `${negative ? '-' : ''}${whole}${fraction}`;
}

/**
 * A fiat amount in minor units for display: "$12.34", "¥1,500", "KWD 1.250". The ISO 4217 exponent decides
 * the digits; the value reaches Intl as a decimal string, so no floating point is involved.
 */
export function formatFiat(minorUnits: number | bigint, currency: string, locale = 'en-US'): string {
  const exponent = fiatExponent(currency);
  const format = new Intl.NumberFormat(locale, {
    style: 'currency',
    currency: currency.toUpperCase(),
    minimumFractionDigits: exponent,
    maximumFractionDigits: exponent,
  });
  return format.format(decimalString(BigInt(minorUnits), exponent) as Intl.StringNumericLiteral);
}

/**
 * Token base units for display with bigint and string math only: ("12340000", 6) → "12.34",
 * ("1234500000000000000000", 18) → "1,234.5". Trailing zeros of the fraction are dropped, nothing is rounded.
 */
export function formatTokenUnits(baseUnits: string | bigint, decimals: number, group = true): string {
  const exact = decimalString(BigInt(baseUnits), decimals);
  const [whole, fraction = ''] = exact.split('.');
  const grouped = group ? whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',') : whole;
  const trimmed = fraction.replace(/0+$/, '');
  return trimmed ? `${grouped}.${trimmed}` : grouped;
}


/**
 * What a person typed as an amount ("12.5", "1,250.00", "1500") in minor units of `currency`, or null when it
 * is not a positive amount with at most the currency's digits. String math only: "0.1" is exactly 10 cents.
 */
export function parseFiat(text: string, currency: string): number | null {
  const exponent = fiatExponent(currency);
  const cleaned = text.trim().replace(/[,\s]/g, '');
  const m = /^(\d+)(?:\.(\d*))?$/.exec(cleaned);
  if (!m) return null;
  const fraction = m[2] ?? '';
  if (fraction.length > exponent) return null;
  const minor = BigInt(m[1] + fraction.padEnd(exponent, '0'));
  if (minor <= 0n || minor > 2147483647n) return null;
  return Number(minor);
}
