import { Transform } from 'class-transformer';

/**
 * A name of nothing but blanks is no name: `""` or `"   "` reads as null, which clears the field. For the
 * merchant's own settings. The partner API and onboarding store and echo what was supplied (spec §4.5), a
 * blank name too; the payer surfaces pass over a blank one all the same (shownName: the display name, else the
 * business name, DESIGN §8).
 */
export function BlankClears(): PropertyDecorator {
  return Transform(({ value }) => (typeof value === 'string' && value.trim() === '' ? null : value));
}
