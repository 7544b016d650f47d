import { Transform } from 'class-transformer';

/**
 * A name of nothing but blanks is no name: `""` or `"   "` reads as `to` (undefined: not sent; null: cleared).
 * For the merchant's own settings. The partner API and onboarding store and echo what was supplied (spec §4.5),
 * a blank name too; the payer surfaces pass over a blank one all the same (the display name, else the business
 * name: DESIGN §8).
 */
export function BlankAs(to: undefined | null): PropertyDecorator {
  return Transform(({ value }) => (typeof value === 'string' && value.trim() === '' ? to : value));
}
