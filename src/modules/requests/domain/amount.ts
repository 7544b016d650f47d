/**
 * Fiat → token base units, exactly (DESIGN §3):
 *   amount = ceil(fiat_minor × 10^token_decimals ÷ (rate × 10^fiat_exponent))
 * rate is fiat units per one token, as a decimal string; everything is bigint, no floating point anywhere.
 */
export function parseDecimal(rate: string): { num: bigint; scale: bigint } {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(rate);
  if (!m) throw new Error(`not a decimal: ${rate}`);
  const frac = m[2] ?? '';
  return { num: BigInt(m[1] + frac), scale: 10n ** BigInt(frac.length) };
}

export function fiatToTokenAmount(fiatMinor: number | bigint, fiatExponent: number, tokenDecimals: number, rate: string): bigint {
  const fiat = BigInt(fiatMinor);
  if (fiat <= 0n) throw new Error('fiat amount must be positive');
  const { num, scale } = parseDecimal(rate);
  if (num === 0n) throw new Error('rate must be positive');
  // fiat × 10^dec ÷ ((num/scale) × 10^exp) = fiat × 10^dec × scale ÷ (num × 10^exp)
  const numerator = fiat * 10n ** BigInt(tokenDecimals) * scale;
  const denominator = num * 10n ** BigInt(fiatExponent);
  return (numerator + denominator - 1n) / denominator;
}
