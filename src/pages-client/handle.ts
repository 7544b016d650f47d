import { amountProblem, formatFiat, parseFiat } from '../modules/pages/format';
import { api, ApiError, commonProblem } from './lib/api';
import { byId, say } from './lib/dom';
import { clearFieldErrors, fieldError, formValues, showFieldErrors } from './dashboard/forms';
import { newIdempotencyKey } from './lib/idempotency';
import { shownName } from '../common/names';

/** The public handle page (DESIGN §5): anyone enters an amount and goes to the pay page of a new request. */
interface HandleView {
  handle: string;
  display_name: string | null;
  fiat_currency: string;
  test_mode: boolean;
  accepting_payments: boolean;
}

const root = byId('handle-page');
const handle = root.dataset.handle!;
const apiBase = `/m/api/${encodeURIComponent(handle)}`;
const form = byId<HTMLFormElement>('handle-form');
const problem = byId('handle-error');
const payButton = byId<HTMLButtonElement>('handle-pay');

function explain(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.code === 'merchant_disabled') return 'This merchant is not accepting payments right now.';
    if (e.code === 'not_found') return 'There is no merchant at this address. Check the link.';
    if (e.code === 'invalid_request') return 'Some details need fixing: see the messages next to the fields.';
    if (e.code === 'currency_mismatch') return 'This merchant now takes payments in another currency. Reload the page and enter the amount again.';
    if (e.code === 'rate_source_unavailable') return 'Prices cannot be converted right now. Please try again in a minute.';
  }
  return commonProblem(e) ?? 'Something went wrong. Please try again.';
}

function closed(): void {
  form.hidden = true;
  byId('handle-closed').hidden = false;
}

async function main(): Promise<void> {
  let view: HandleView;
  try {
    view = await api<HandleView>('GET', apiBase);
  } catch (e) {
    if (e instanceof ApiError && e.code === 'not_found') {
      byId('handle-name').textContent = 'No merchant at this address';
      document.title = 'Not found';
    } else {
      byId('handle-name').textContent = 'Pay';
    }
    say(problem, explain(e));
    return;
  }
  const name = shownName(view.display_name, view.handle);
  byId('handle-name').textContent = `Pay ${name}`;
  document.title = `Pay ${name}`;
  byId('handle-test-mode').hidden = !view.test_mode;
  const currency = view.fiat_currency;
  document.querySelector('label[for="handle-amount"]')!.textContent = `Amount in ${currency.toUpperCase()}`;
  if (!view.accepting_payments) return closed();
  form.hidden = false;
  // What the typed amount is read as, before anything is made: "12,50" is €12.50, and a text read two ways
  // ("1,250" dinars) is refused rather than guessed.
  const amountField = byId<HTMLInputElement>('handle-amount');
  const amountHint = byId('handle-amount-hint');
  amountField.addEventListener('input', () => {
    const minor = parseFiat(amountField.value, currency);
    if (minor !== null) amountHint.textContent = `You pay ${formatFiat(minor, currency)}`;
    else amountHint.textContent = amountField.value.trim() ? amountProblem(amountField.value, currency, '12.50') : 'For example 12.50';
  });

  // One Idempotency-Key per payment the payer means to make: a retry of the same details (a lost answer, a
  // second click) gets the request already made; changed details, or a page come back to from the pay page
  // through the browser's history, make a new one.
  let replay: { body: string; key: string } | null = null;
  addEventListener('pageshow', (e) => {
    if (e.persisted) replay = null;
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFieldErrors(form);
    say(problem, '');
    const v = formValues(form, ['amount', 'memo', 'customer_email']);
    const amount = parseFiat(v.amount ?? '', currency);
    if (amount === null) {
      fieldError(form, 'amount', amountProblem(v.amount ?? '', currency, '12.50'));
      byId('handle-amount').focus();
      return;
    }
    const body = {
      fiat_amount_int: amount,
      fiat_currency_code: currency,
      ...(v.memo ? { memo: v.memo } : {}),
      ...(v.customer_email ? { customer_email: v.customer_email } : {}),
    };
    const sent = JSON.stringify(body);
    if (replay?.body !== sent) replay = { body: sent, key: newIdempotencyKey() };
    payButton.disabled = true;
    try {
      const created = await api<{ pay_page_url: string }>('POST', `${apiBase}/requests`, body, { 'idempotency-key': replay.key });
      location.assign(created.pay_page_url);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'merchant_disabled') closed();
      showFieldErrors(form, e, { fiat_amount_int: 'amount' });
      say(problem, explain(e));
      payButton.disabled = false;
    }
  });
}

void main();
