import { applyDecorators } from '@nestjs/common';
import { IsOptional, IsString, Matches } from 'class-validator';
import { AppError } from '../errors';
import { normalizeCurrency } from '../currencies';

/**
 * `fiat_currency_code`: an assertion of the currency the caller priced the amount in (spec §4.1), not an override.
 * The partner API takes it; the merchant-side forms (dashboard request and plan, handle page) send the currency
 * they showed, so a currency changed meanwhile in another tab is refused instead of re-pricing the amount.
 */
export const CurrencyAssertion = () =>
  applyDecorators(IsOptional(), IsString(), Matches(/^[A-Za-z]{3}$/, { message: 'fiat_currency_code must be an ISO 4217 code' }));

/** 400 currency_mismatch naming the effective currency, when an asserted one (any case) differs from it. */
export function currencyMismatch(asserted: string | undefined, effective: string): AppError | null {
  if (asserted === undefined || normalizeCurrency(asserted) === effective) return null;
  return new AppError('currency_mismatch', { expected_fiat_code: effective });
}
