import type { NoPayReason } from '../../modules/requests/domain/pay-rule';

/** Why a submitted transaction does not pay the request, in words a payer can act on (DESIGN §8). */
export const NO_PAY_WORDS: Record<NoPayReason, string> = {
  wrong_chain: 'it was sent on another network',
  transaction_failed: 'the transaction failed on the network, so nothing was sent',
  no_transfer_to_recipient: 'it sends nothing to this merchant’s address',
  wrong_token: 'it sends another token than the one requested',
  underpaid: 'it sends less than the amount requested',
  overpaid: 'it sends more than the amount requested',
  before_request: 'it was sent before this payment request was created',
  after_window: 'it was sent after this payment request closed',
};

export function noPayText(reason: string | null | undefined): string {
  const words = reason && reason in NO_PAY_WORDS ? NO_PAY_WORDS[reason as NoPayReason] : 'it does not pay this request';
  return `That transaction does not pay this request: ${words}. If you paid with another transaction, submit its hash.`;
}
