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
  // A request with no proof expires at expires_at (DESIGN §3); one whose attached proof has not verified when
  // its claim window closes expires then (DESIGN §7). When each lapses is LAPSES_AT below.
  expire: { from: ['requested', 'opened'], whenProof: ['none', 'attached'], to: 'expired' },
};

export const PROOF_TRANSITIONS: Record<ProofTrigger, Rule<ProofStatus>> = {
  attach: { from: ['none'], to: 'attached' },
  // Money that arrived within the window is reported whatever the status (DESIGN §3).
  verify: { from: ['none', 'attached'], to: 'verified' },
};

/** Proof states in which a request can expire, and the moment of the request at which each one lapses. */
export type LapsingProof = 'none' | 'attached';
export const LAPSES_AT: Record<LapsingProof, 'expiresAt' | 'claimUntil'> = {
  none: 'expiresAt',
  // An attached hash may still pay until the claim window (expires_at + grace) closes.
  attached: 'claimUntil',
};

export interface Deadlines {
  expiresAt: Date;
  claimUntil: Date;
}

/** When a request in this state lapses into expired, or null when it never does (verified, expired, voided). */
export function lapsesAt(state: RequestState, d: Deadlines): Date | null {
  if (nextStatus(state, 'expire') === null) return null;
  switch (state.proofStatus) {
    case 'none':
    case 'attached':
      return d[LAPSES_AT[state.proofStatus]];
    case 'verified':
      return null;
  }
}

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
 * The status as shown: a request that has lapsed (no proof past expires_at, an unverified proof past
 * claim_until) reads as expired even before the expiry job or sweep has stored it.
 */
export function effectiveStatus(r: RequestState & Deadlines, now: Date): RequestStatus {
  const at = lapsesAt(r, r);
  if (at !== null && at.getTime() <= now.getTime()) return 'expired';
  return r.status;
}

/**
 * While a proof is attached, another hash replaces it only when the attached one is known not to pay (its
 * verification left a reason); otherwise proof_already_attached (DESIGN §7). No event: proof_status stays.
 */
export function proofReplaceable(r: RequestState & { verifyNote: string | null }): boolean {
  return r.proofStatus === 'attached' && r.verifyNote !== null;
}
