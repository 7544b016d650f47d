import {
  effectiveStatus,
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
 *   expire: requested or opened, with proof none → expired (DESIGN §3 "Expiry").
 *   attach: proof none → attached, whatever the status (DESIGN §4: a proof is accepted whatever the status).
 *   verify: proof none or attached → verified, whatever the status (DESIGN §3: money that arrived is reported).
 */
type Row = [RequestStatus, ProofStatus, { open: RequestStatus | null; cancel: RequestStatus | null; expire: RequestStatus | null }];

const STATUS_TABLE: Row[] = [
  ['requested', 'none', { open: 'opened', cancel: 'voided', expire: 'expired' }],
  ['requested', 'attached', { open: 'opened', cancel: null, expire: null }],
  ['requested', 'verified', { open: 'opened', cancel: null, expire: null }],
  ['opened', 'none', { open: null, cancel: null, expire: 'expired' }],
  ['opened', 'attached', { open: null, cancel: null, expire: null }],
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
  const before = new Date(expiresAt.getTime() - 1);
  const atExpiry = new Date(expiresAt.getTime());
  const after = new Date(expiresAt.getTime() + 1);
  const muchLater = new Date(expiresAt.getTime() + 365 * 24 * 3600 * 1000);

  // A request with no proof whose expiry has passed reads as expired (DESIGN §3: "Reads never show a request
  // with proof_status none as requested/opened after its expiry"); everything else reads as stored.
  // At exactly expires_at the request counts as lapsed, the same boundary the SQL uses (expires_at <= now()).
  const lapsedShowsAs = (status: RequestStatus, proofStatus: ProofStatus): RequestStatus =>
    (status === 'requested' || status === 'opened') && proofStatus === 'none' ? 'expired' : status;

  const cases = REQUEST_STATUSES.flatMap((status) =>
    PROOF_STATUSES.flatMap((proofStatus) => [
      [status, proofStatus, 'before expiry', status, before] as const,
      [status, proofStatus, 'at expiry', lapsedShowsAs(status, proofStatus), atExpiry] as const,
      [status, proofStatus, '1 ms after expiry', lapsedShowsAs(status, proofStatus), after] as const,
      [status, proofStatus, 'a year after expiry', lapsedShowsAs(status, proofStatus), muchLater] as const,
    ]),
  );
  it.each(cases)('%s + proof %s, %s → %s', (status, proofStatus, _label, expected, now) => {
    expect(effectiveStatus({ status, proofStatus }, expiresAt, now)).toBe(expected);
  });

  it('a proof attached before expiry keeps the request out of expired', () => {
    expect(effectiveStatus({ status: 'opened', proofStatus: 'attached' }, expiresAt, muchLater)).toBe('opened');
    expect(effectiveStatus({ status: 'requested', proofStatus: 'verified' }, expiresAt, muchLater)).toBe('requested');
  });
});
