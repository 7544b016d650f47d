import type { ProofStatus, RequestStatus } from '../../modules/requests/domain/transitions';

/**
 * What the pay page shows, derived from the request's two state axes. One rule for the server's first
 * render and for the script's updates, so both always agree.
 */
export type PayPhase = 'payable' | 'checking' | 'paid' | 'expired' | 'voided';

export function payPhase(
  status: RequestStatus,
  proofStatus: ProofStatus,
  attached: { note: string | null; pastDeadline: boolean } = { note: null, pastDeadline: false },
): PayPhase {
  // Money that arrived is reported whatever the status (DESIGN §3): proof wins over expiry and voiding.
  switch (proofStatus) {
    case 'verified':
      return 'paid';
    case 'attached':
      // An attached hash still being checked may pay; one known not to pay (its note says why) checks nothing,
      // so the request reads as its status: still payable, with the note, or expired. Anyone can attach a
      // hash that pays nothing, and it must not take the payment offer off the page. Its status reads
      // `opened` until the claim window closes, an hour past expires_at: from expires_at on, no payment is
      // offered (DESIGN §4).
      if (attached.note === null) return 'checking';
      if (attached.pastDeadline && (status === 'requested' || status === 'opened')) return 'expired';
      break;
    case 'none':
      break;
  }
  switch (status) {
    case 'requested':
    case 'opened':
      return 'payable';
    case 'expired':
      return 'expired';
    case 'voided':
      return 'voided';
  }
}

/** The phases in which each part of the page is shown; everything else is `hidden`. */
export const SHOWN_IN = {
  // Payment is offered only while the request can still be paid (no QR, address or button afterwards).
  pay: ['payable'],
  countdown: ['payable'],
  // A payer who paid from another device, or paid anyway after expiry, can still prove it (DESIGN §4).
  proof: ['payable', 'checking', 'expired', 'voided'],
  paid: ['paid'],
} as const satisfies Record<string, readonly PayPhase[]>;

export type PayPart = keyof typeof SHOWN_IN;

export function isShown(part: PayPart, phase: PayPhase): boolean {
  return (SHOWN_IN[part] as readonly PayPhase[]).includes(phase);
}

export const PHASE_TEXT: Record<PayPhase, { title: string; detail: string }> = {
  payable: {
    title: 'Waiting for payment',
    detail: 'Pay with your browser wallet, or scan the QR code with a wallet app.',
  },
  checking: {
    title: 'Payment submitted',
    detail: 'Your transaction is being confirmed on the network. This page updates by itself; you can also close it.',
  },
  paid: { title: 'Paid', detail: 'The payment is confirmed. Thank you!' },
  expired: {
    title: 'This payment request has expired',
    detail: 'Please do not send a payment for it. Ask the merchant for a new payment link.',
  },
  voided: {
    title: 'This payment request was cancelled',
    detail: 'The merchant cancelled it. Please do not send a payment for it.',
  },
};
