import { ApiError, commonProblem } from '../lib/api';
import { WalletError } from '../lib/wallet';

/** Sentences for the dashboard API's error codes (DESIGN §5, §8; spec §7). */
const CODE_WORDS: Record<string, string> = {
  invalid_signature: 'The signature could not be checked. Please sign in again with the wallet that receives your payments.',
  not_a_merchant: 'This wallet does not belong to a merchant that finished setting up payments. Connect the wallet you set up with.',
  unauthorized: 'Your session has ended. Please sign in again.',
  csrf_failed: 'This tab lost its sign-in token. Please sign out and sign in again.',
  not_found: 'This does not exist, or it is not yours.',
  merchant_disabled: 'Your account is disabled, so no new payment requests can be created. Ask your partner why.',
  cannot_cancel: 'This request can no longer be cancelled: the customer has opened it or a payment was sent.',
  invalid_expiry_minutes: 'That expiry is not allowed.',
  invalid_handle:
    'That handle cannot be used. Use 3 to 20 characters: letters a–z, digits and single dashes, starting with a letter and ending with a letter or digit. Some words, such as admin or pay, are reserved.',
  handle_taken: 'That handle belongs, or once belonged, to someone else. Choose another one.',
  plan_not_active: 'This plan is not active: it was paused, cancelled or completed meanwhile.',
  test_mode_only: 'The test clock works only for test-mode plans.',
  invalid_request: 'Some details need fixing: see the messages next to the fields.',
  unsupported_currency: 'That currency is not supported. Choose one from the list.',
  currency_mismatch: 'The amount is not in your currency. Reload the page and try again.',
  currency_in_use:
    'Your currency cannot change while you have active or paused plans: they charge in it. Cancel them first, or keep your currency.',
  conflict: 'Something changed at the same moment (in another tab?). Reload the page and try again.',
  rate_source_unavailable: 'Exchange rates are unavailable right now, so no request can be priced. Please try again in a minute.',
  asset_unavailable: 'Payments are paused for maintenance. Please try again later.',
  chain_unavailable: 'The blockchain cannot be reached right now. Please try again in a minute.',
};

export function explain(e: unknown): string {
  if (e instanceof WalletError) return e.message;
  if (e instanceof ApiError) {
    if (e.code === 'invalid_expiry_minutes' && Array.isArray(e.body.allowed_expiry_minutes)) {
      return `That expiry is not allowed. Use one of: ${(e.body.allowed_expiry_minutes as number[]).join(', ')} minutes, or leave it empty.`;
    }
    const words = CODE_WORDS[e.code];
    if (words) return words;
  }
  return commonProblem(e) ?? 'Something went wrong. Please try again.';
}

/** A request's state in words: the payment axis first (what the merchant cares about), then the status. */
export function stateWords(r: { status: string; proof_status: string }): { text: string; tone: 'ok' | 'warn' | 'bad' | 'info' } {
  if (r.proof_status === 'verified') return { text: 'Paid', tone: 'ok' };
  if (r.proof_status === 'attached') return { text: 'Payment being checked', tone: 'info' };
  switch (r.status) {
    case 'requested':
      return { text: 'Waiting for the customer', tone: 'info' };
    case 'opened':
      return { text: 'Opened by the customer', tone: 'info' };
    case 'expired':
      return { text: 'Expired', tone: 'warn' };
    case 'voided':
      return { text: 'Cancelled', tone: 'bad' };
    default:
      return { text: r.status, tone: 'info' };
  }
}

export const STATUS_NAMES: Record<string, string> = {
  requested: 'Requested',
  opened: 'Opened',
  expired: 'Expired',
  voided: 'Cancelled',
};

export const SOURCE_NAMES: Record<string, string> = {
  partner: 'Partner API',
  dashboard: 'Dashboard',
  handle: 'Handle page',
  plan: 'Plan',
};
