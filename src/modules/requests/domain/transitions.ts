/**
 * The two state axes of a payment request and the one table for each (spec §3, DESIGN §3).
 * Every state change in SQL is conditional on the `from` states listed here, so racing writers cannot both win.
 */
export type RequestStatus = 'requested' | 'opened' | 'expired' | 'voided';
export type ProofStatus = 'none' | 'attached' | 'verified';

export const REQUEST_STATUSES: readonly RequestStatus[] = ['requested', 'opened', 'expired', 'voided'];
export const PROOF_STATUSES: readonly ProofStatus[] = ['none', 'attached', 'verified'];

export type StatusTrigger = 'open' | 'cancel' | 'expire';
export type ProofTrigger = 'attach' | 'verify';

export interface RequestState {
  status: RequestStatus;
  proofStatus: ProofStatus;
}

interface Rule<S> {
  from: readonly S[];
  /** Proof states in which the trigger applies (status axis only). */
  whenProof?: readonly ProofStatus[];
  to: S;
}

export const STATUS_TRANSITIONS: Record<StatusTrigger, Rule<RequestStatus>> = {
  open: { from: ['requested'], to: 'opened' },
  // Cancel only in exactly this combination (spec §3).
  cancel: { from: ['requested'], whenProof: ['none'], to: 'voided' },
  // Only a request nobody has offered proof for expires (DESIGN §3).
  expire: { from: ['requested', 'opened'], whenProof: ['none'], to: 'expired' },
};

export const PROOF_TRANSITIONS: Record<ProofTrigger, Rule<ProofStatus>> = {
  attach: { from: ['none'], to: 'attached' },
  // Money that arrived within the window is reported whatever the status (DESIGN §3).
  verify: { from: ['none', 'attached'], to: 'verified' },
};

/** The next status, or null when the trigger does not apply in this state. */
export function nextStatus(state: RequestState, trigger: StatusTrigger): RequestStatus | null {
  const rule = STATUS_TRANSITIONS[trigger];
  if (!rule.from.includes(state.status)) return null;
  if (rule.whenProof && !rule.whenProof.includes(state.proofStatus)) return null;
  return rule.to;
}

export function nextProofStatus(state: RequestState, trigger: ProofTrigger): ProofStatus | null {
  const rule = PROOF_TRANSITIONS[trigger];
  return rule.from.includes(state.proofStatus) ? rule.to : null;
}

/**
 * The status as shown: a request with no proof whose expiry has passed reads as expired even before the
 * expiry job has run, so no read ever shows requested/opened past expires_at.
 */
export function effectiveStatus(state: RequestState, expiresAt: Date, now: Date): RequestStatus {
  if (nextStatus(state, 'expire') !== null && expiresAt.getTime() <= now.getTime()) return 'expired';
  return state.status;
}
