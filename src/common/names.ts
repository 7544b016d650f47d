/**
 * The first of `names` that says something: a name of nothing but blanks ("" or "   ", which the partner API
 * stores as supplied, spec §4.5) is passed over, so the payer sees the business name (DESIGN §8: the display
 * name, else the business name) and never an empty one. Null when none does.
 */
export function shownName(...names: Array<string | null | undefined>): string | null {
  return names.find((n): n is string => typeof n === 'string' && n.trim() !== '') ?? null;
}
