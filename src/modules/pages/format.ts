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
 * Which of "," and "." a typed amount uses as its decimal mark and which to group thousands, or null when the
 * text can be read two ways. Both present: the last is the decimal mark ("1,250.50", "1.250,50"). One mark
 * several times: groups ("1,250,000"). One "." once: the decimal mark. One "," once: the decimal mark
 * ("12,50", as most of Europe writes it), unless three digits follow it, which no currency of fewer than three
 * decimals can mean ("1,250" is 1250 dollars or euros). With three-decimal currencies one mark followed by
 * three digits is refused either way ("1,250" or "1.250" dinars), unless the whole part is 0 ("0.250").
 */
function marks(text: string, exponent: number): { decimal: string | null; group: string | null } | null {
  const commas = text.split(',').length - 1;
  const dots = text.split('.').length - 1;
  if (commas > 0 && dots > 0) return text.lastIndexOf(',') > text.lastIndexOf('.') ? { decimal: ',', group: '.' } : { decimal: '.', group: ',' };
  if (dots > 1) return { decimal: null, group: '.' };
  if (commas > 1) return { decimal: null, group: ',' };
  // One mark followed by three digits is a thousands group to some and three decimals to others: with a
  // currency of three decimals that is two readings, refused. "." alone is otherwise the decimal mark.
  const single = commas === 1 ? ',' : dots === 1 ? '.' : null;
  if (single === null) return { decimal: null, group: null };
  // A whole part of one 0 cannot be a group (groups never start with 0, below): "0.255" or "0,255" dinars is
  // 255 fils and nothing else, the only way to type an amount under one dinar that ends in a fils digit.
  const threeAfter = text.length - text.indexOf(single) - 1 === 3 && text.slice(0, text.indexOf(single)) !== '0';
  if (threeAfter && exponent >= 3) return null;
  if (single === '.') return { decimal: '.', group: null };
  return threeAfter ? { decimal: null, group: ',' } : { decimal: ',', group: null };
}

/**
 * What a person typed as an amount ("12.5", "12,50", "1,250.00", "1.250,00", "1 500") in minor units of
 * `currency`, or null when it is not a positive amount with at most the currency's digits (zeros past them
 * aside), or could be read two ways. Thousands must be whole groups of three: "12,50.00" is refused, never read as 1250. String math
 * only: "0.1" is exactly 10 cents.
 */
export function parseFiat(text: string, currency: string): number | null {
  const exponent = fiatExponent(currency);
  // Spaces (also no-break and narrow no-break) and apostrophes only ever group digits ("1 250,50", "1'250.50").
  const cleaned = text.trim().replace(/[\s'’]/g, ' ');
  let m = marks(cleaned, exponent);
  if (m && cleaned.includes(' ')) m = m.group === null ? { decimal: m.decimal, group: ' ' } : null;
  if (!m) return null;
  const at = m.decimal === null ? cleaned.length : cleaned.indexOf(m.decimal);
  if (m.decimal !== null && cleaned.indexOf(m.decimal, at + 1) >= 0) return null;
  const whole = cleaned.slice(0, at);
  const fraction = cleaned.slice(at + 1);
  // Grouped digits start with a non-zero digit: "0,500" is half of something to whoever typed it, not 500.
  const wholeShape = m.group === null ? /^\d+$/ : new RegExp(`^[1-9]\\d{0,2}(?:\\${m.group}\\d{3})*$`);
  // Zeros past the currency's digits change nothing ("1500.00" yen): "1.2550" is how 1.255 dinars is typed, where
  // "1.255" reads two ways. Not after one mark followed by three digits or more in a currency of fewer than three
  // decimals: "1.500" euros is 1500 to some, and "1,0000" dollars is "1,000" with a digit too many (it was $1.00,
  // a thousandth of 1,000: one key off). A whole part of 0 is never a group.
  const extra = fraction.slice(exponent);
  const groupToSome = m.group === null && fraction.length >= 3 && exponent < 3 && whole !== '0';
  if (!wholeShape.test(whole) || !/^\d*$/.test(fraction) || (extra !== '' && (groupToSome || /[1-9]/.test(extra)))) return null;
  const minor = BigInt(whole.replace(/\D/g, '') + fraction.slice(0, exponent).padEnd(exponent, '0'));
  if (minor <= 0n || minor > 2147483647n) return null;
  return Number(minor);
}

/**
 * What an amount form says of a typed amount parseFiat refused: for one read two ways ("1.255" dinars), both
 * readings and how to type each; otherwise what to type, with `example`.
 */
export function amountProblem(text: string, currency: string, example: string): string {
  const typed = text.trim();
  const two = /^([1-9]\d{0,2})([.,])(\d{3})$/.exec(typed);
  if (two && fiatExponent(currency) >= 3) {
    const asDecimal = parseFiat(`${typed}0`, currency);
    const asGroups = parseFiat(`${two[1]}${two[3]}`, currency);
    if (asDecimal !== null && asGroups !== null) {
      return `"${typed}" reads two ways: type ${typed}0 for ${formatFiat(asDecimal, currency)}, or ${two[1]}${two[3]} for ${formatFiat(asGroups, currency)}.`;
    }
  }
  return `Enter a positive amount in ${currency.toUpperCase()}, for example ${example}.`;
}
