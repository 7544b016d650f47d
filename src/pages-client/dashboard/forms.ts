import { ApiError } from '../lib/api';
import { say } from '../lib/dom';

/**
 * Field errors of a dashboard form. Inputs are found by `name`; each has an error slot `<id>-error` next to
 * it (textField in dashboard-pages.view.ts).
 */
export function clearFieldErrors(form: HTMLFormElement): void {
  for (const el of Array.from(form.querySelectorAll<HTMLElement>('.field-error'))) say(el, '');
  for (const el of Array.from(form.querySelectorAll<HTMLElement>('[aria-invalid]'))) el.removeAttribute('aria-invalid');
}

export function fieldError(form: HTMLFormElement, name: string, text: string): boolean {
  const input = form.querySelector<HTMLElement>(`[name="${CSS.escape(name)}"]`);
  const slot = input ? document.getElementById(`${input.id}-error`) : null;
  if (!input || !slot) return false;
  input.setAttribute('aria-invalid', 'true');
  say(slot, text);
  return true;
}

/** invalid_request's `errors` next to their fields; `rename` maps API fields to form names (fiat_amount_int → amount). */
export function showFieldErrors(form: HTMLFormElement, e: unknown, rename: Record<string, string> = {}): void {
  if (!(e instanceof ApiError) || !Array.isArray(e.body.errors)) return;
  for (const { field } of e.body.errors as { field: string }[]) {
    fieldError(form, rename[field] ?? field, FIELD_WORDS[field] ?? 'Please check this field.');
  }
}

/** The form's trimmed, non-empty text values by name. */
export function formValues(form: HTMLFormElement, names: string[]): Record<string, string> {
  const data = new FormData(form);
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = String(data.get(n) ?? '').trim();
    if (v) out[n] = v;
  }
  return out;
}

/** Field-level messages for invalid_request's `errors` (spec §4.1, §4.5 limits). */
export const FIELD_WORDS: Record<string, string> = {
  fiat_amount_int: 'Enter a positive amount.',
  memo: 'Use at most 500 characters.',
  customer_name: 'Use at most 200 characters.',
  customer_email: 'Use a valid email address of at most 254 characters.',
  customer_phone: 'Use at most 50 characters.',
  payer_email: 'Use a valid email address of at most 254 characters.',
  expiry_minutes: 'Use a whole number of minutes, or leave it empty.',
  display_name: 'Use at most 120 characters.',
  business_name: 'Use at most 120 characters.',
  email: 'Use a valid email address of at most 254 characters.',
  phone: 'Use at most 32 characters.',
  website: 'Use at most 200 characters.',
  instagram: 'Use at most 200 characters.',
  industry: 'Use at most 80 characters.',
  country: 'Use the two-letter country code, for example DE, US or IN.',
  display_currency: 'Choose one of the listed currencies.',
  handle: 'Use 3 to 20 characters: a–z, digits and single dashes, starting with a letter.',
};
