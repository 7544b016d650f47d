import { Transform } from 'class-transformer';

/**
 * A name of nothing but blanks is no name: `""` or `"   "` reads as `to` (undefined: not sent; null: cleared),
 * so the payer surfaces fall back as DESIGN §8 says (the display name, else the business name) instead of
 * naming the merchant "" on the pay page, the handle page and the receipt.
 */
export function BlankAs(to: undefined | null): PropertyDecorator {
  return Transform(({ value }) => (typeof value === 'string' && value.trim() === '' ? to : value));
}
