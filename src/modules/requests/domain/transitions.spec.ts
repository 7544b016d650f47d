import {
  effectiveStatus,
  lapsesAt,
  nextProofStatus,
  nextStatus,
  PROOF_STATUSES,
  PROOF_TRANSITIONS,
  REQUEST_STATUSES,
  STATUS_TRANSITIONS,
  type ProofStatus,
  type ProofTrigger,
  type RequestStatus,
  type StatusTrigger,
} from './transitions';

/*
 * The expected tables are written out by hand from spec §3 and DESIGN §3, one row per (status, proof_status),
 * not derived from the code's tables: a wrong entry in either table shows up as a failing row.
 *
 *   open:   status requested → opened, whatever the proof (spec §3 row 1; the page may be opened after a proof).
 *   cancel: only requested + none → voided (spec §3: "only in exactly this combination").
 *   expire: requested or opened, with proof none or attached → expired (DESIGN §3 "Expiry"; §7: an attached
 *           proof that has not verified when the claim window closes). When each lapses is tested below.
 *   attach: proof none → attached, whatever the status (DESIGN §4: a proof is accepted whatever the status).
 *   verify: proof none or attached → verified, whatever the status (DESIGN §3: money that arrived is reported).
 */
type Row = [RequestStatus, ProofStatus, { open: RequestStatus | null; cancel: RequestStatus | null; expire: RequestStatus | null }];

const STATUS_TABLE: Row[] = [
  ['requested', 'none', { open: 'opened', cancel: 'voided', expire: 'expired' }],
  ['requested', 'attached', { open: 'opened', cancel: null, expire: 'expired' }],
  ['requested', 'verified', { open: 'opened', cancel: null, expire: null }],
  ['opened', 'none', { open: null, cancel: null, expire: 'expired' }],
  ['opened', 'attached', { open: null, cancel: null, expire: 'expired' }],
  ['opened', 'verified', { open: null, cancel: null, expire: null }],
  ['expired', 'none', { open: null, cancel: null, expire: null }],
  ['expired', 'attached', { open: null, cancel: null, expire: null }],
  ['expired', 'verified', { open: null, cancel: null, expire: null }],
  ['voided', 'none', { open: null, cancel: null, expire: null }],
  ['voided', 'attached', { open: null, cancel: null, expire: null }],
  ['voided', 'verified', { open: null, cancel: null, expire: null }],
];

type ProofRow = [RequestStatus, ProofStatus, { attach: ProofStatus | null; verify: ProofStatus | null }];
const PROOF_TABLE: ProofRow[] = REQUEST_STATUSES.flatMap((status): ProofRow[] => [
  [status, 'none', { attach: 'attached', verify: 'verified' }],
  [status, 'attached', { attach: null, verify: 'verified' }],
  [status, 'verified', { attach: null, verify: null }],
]);

const STATUS_TRIGGERS: StatusTrigger[] = ['open', 'cancel', 'expire'];
const PROOF_TRIGGERS: ProofTrigger[] = ['attach', 'verify'];

describe('the tables cover every state', () => {
  it('lists exactly the spec states', () => {
    expect([...REQUEST_STATUSES].sort()).toEqual(['expired', 'opened', 'requested', 'voided']);
    expect([...PROOF_STATUSES].sort()).toEqual(['attached', 'none', 'verified']);
  });

  it('has exactly the triggers tested here', () => {
    expect(Object.keys(STATUS_TRANSITIONS).sort()).toEqual([...STATUS_TRIGGERS].sort());
    expect(Object.keys(PROOF_TRANSITIONS).sort()).toEqual([...PROOF_TRIGGERS].sort());
  });

  it('the expected tables above have one row per (status, proof_status)', () => {
    expect(STATUS_TABLE).toHaveLength(REQUEST_STATUSES.length * PROOF_STATUSES.length);
    expect(PROOF_TABLE).toHaveLength(REQUEST_STATUSES.length * PROOF_STATUSES.length);
    const seen = new Set(STATUS_TABLE.map(([s, p]) => `${s}/${p}`));
    expect(seen.size).toBe(STATUS_TABLE.length);
  });
});

describe('status axis: nextStatus', () => {
  const cases = STATUS_TABLE.flatMap(([status, proofStatus, next]) =>
    STATUS_TRIGGERS.map((trigger) => [status, proofStatus, trigger, next[trigger]] as const),
  );
  it.each(cases)('%s + proof %s, trigger %s → %s', (status, proofStatus, trigger, expected) => {
    expect(nextStatus({ status, proofStatus }, trigger)).toBe(expected);
  });

  it('no status trigger ever leads back to requested', () => {
    for (const [status, proofStatus] of STATUS_TABLE) {
      for (const t of STATUS_TRIGGERS) expect(nextStatus({ status, proofStatus }, t)).not.toBe('requested');
    }
  });
});

describe('proof axis: nextProofStatus', () => {
  const cases = PROOF_TABLE.flatMap(([status, proofStatus, next]) =>
    PROOF_TRIGGERS.map((trigger) => [status, proofStatus, trigger, next[trigger]] as const),
  );
  it.each(cases)('%s + proof %s, trigger %s → %s', (status, proofStatus, trigger, expected) => {
    expect(nextProofStatus({ status, proofStatus }, trigger)).toBe(expected);
  });

  it('verified is terminal on the proof axis', () => {
    for (const status of REQUEST_STATUSES) {
      for (const t of PROOF_TRIGGERS) expect(nextProofStatus({ status, proofStatus: 'verified' }, t)).toBeNull();
    }
  });
});

describe('effectiveStatus: what reads show', () => {
  const expiresAt = new Date('2026-01-01T12:00:00.000Z');
  const claimUntil = new Date(expiresAt.getTime() + 60 * 60_000); // the grace window
  const moments: [string, Date][] = [
    ['before expiry', new Date(expiresAt.getTime() - 1)],
    ['at expiry', expiresAt],
    ['1 ms after expiry', new Date(expiresAt.getTime() + 1)],
    ['1 ms before the claim window closes', new Date(claimUntil.getTime() - 1)],
    ['when the claim window closes', claimUntil],
    ['a year later', new Date(claimUntil.getTime() + 365 * 24 * 3600 * 1000)],
  ];

  // DESIGN §3: no proof past expires_at reads as expired. DESIGN §7: an attached proof that has not verified
  // by the close of the claim window reads as expired. Verified, expired and voided read as stored. The
  // boundaries are inclusive, as in the SQL (expires_at <= now(), claim_until <= now()).
  const shownAs = (status: RequestStatus, proofStatus: ProofStatus, now: Date): RequestStatus => {
    if (status !== 'requested' && status !== 'opened') return status;
    if (proofStatus === 'none' && now.getTime() >= expiresAt.getTime()) return 'expired';
    if (proofStatus === 'attached' && now.getTime() >= claimUntil.getTime()) return 'expired';
    return status;
  };

  const cases = REQUEST_STATUSES.flatMap((status) =>
    PROOF_STATUSES.flatMap((proofStatus) =>
      moments.map(([label, now]) => [status, proofStatus, label, shownAs(status, proofStatus, now), now] as const),
    ),
  );
  it.each(cases)('%s + proof %s, %s → %s', (status, proofStatus, _label, expected, now) => {
    expect(effectiveStatus({ status, proofStatus, expiresAt, claimUntil }, now)).toBe(expected);
  });

  it('an attached proof keeps the request out of expired until the claim window closes, not longer', () => {
    const inGrace = new Date(expiresAt.getTime() + 30 * 60_000);
    expect(effectiveStatus({ status: 'opened', proofStatus: 'attached', expiresAt, claimUntil }, inGrace)).toBe('opened');
    expect(effectiveStatus({ status: 'opened', proofStatus: 'attached', expiresAt, claimUntil }, claimUntil)).toBe('expired');
    expect(effectiveStatus({ status: 'requested', proofStatus: 'verified', expiresAt, claimUntil }, moments[5][1])).toBe('requested');
  });

  it('lapsesAt names the deadline of each proof state', () => {
    expect(lapsesAt({ status: 'opened', proofStatus: 'none' }, { expiresAt, claimUntil })).toBe(expiresAt);
    expect(lapsesAt({ status: 'opened', proofStatus: 'attached' }, { expiresAt, claimUntil })).toBe(claimUntil);
    expect(lapsesAt({ status: 'opened', proofStatus: 'verified' }, { expiresAt, claimUntil })).toBeNull();
    expect(lapsesAt({ status: 'voided', proofStatus: 'none' }, { expiresAt, claimUntil })).toBeNull();
  });
});
