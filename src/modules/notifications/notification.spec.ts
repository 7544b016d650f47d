import { messageIdFor, messagesForCharge, messagesForVerified, nextStep, resendRefusal, retriesSince } from './notification';

const policy = { baseMs: 100, maxMs: 1000, giveUpMs: 5000 };

describe('messagesForVerified', () => {
  const r = { requestId: 'r1', customerEmail: 'c@example.com', customerPhone: '+15550001', merchantEmail: 'm@example.com' };
  it.each([
    [{ email: true, sms: true }, r, ['receipt/email', 'receipt/sms', 'merchant_note/email']],
    [{ email: false, sms: true }, r, ['receipt/sms']],
    [{ email: true, sms: false }, r, ['receipt/email', 'merchant_note/email']],
    [{ email: false, sms: false }, r, []],
    [{ email: true, sms: true }, { ...r, customerEmail: null, customerPhone: null }, ['merchant_note/email']],
    [{ email: true, sms: true }, { ...r, merchantEmail: null }, ['receipt/email', 'receipt/sms']],
    // Not one plain address: the message is written all the same (the sender refuses it, and the dashboard
    // shows it failed), a merchant's note too (an email stored before the merchant APIs checked for one address).
    [{ email: true, sms: false }, { ...r, customerEmail: 'c@example.com, v@example.com' }, ['receipt/email', 'merchant_note/email']],
    [{ email: true, sms: false }, { ...r, customerEmail: 'c@example.com\r\nBcc: v@example.com' }, ['receipt/email', 'merchant_note/email']],
    [{ email: true, sms: false }, { ...r, merchantEmail: '"m\r\nBcc: v@example.com"@example.com' }, ['receipt/email', 'merchant_note/email']],
  ])('%j → %j', (on, facts, expected) => {
    expect(messagesForVerified(on, facts).map((m) => `${m.kind}/${m.channel}`)).toEqual(expected);
  });
});

describe('messagesForCharge', () => {
  const c = { requestId: 'r1', planId: 'p1', periodIndex: 2, payerEmail: 'payer@example.com', dueAt: new Date(0) };
  it('a notice by email when email is on and the plan has a payer email', () => {
    expect(messagesForCharge({ email: true, sms: true }, c)).toEqual([
      { kind: 'charge_notice', channel: 'email', to: 'payer@example.com', requestId: 'r1', planId: 'p1', periodIndex: 2, dueAt: new Date(0) },
    ]);
    expect(messagesForCharge({ email: false, sms: true }, c)).toEqual([]);
    expect(messagesForCharge({ email: true, sms: true }, { ...c, payerEmail: null })).toEqual([]);
    expect(messagesForCharge({ email: true, sms: true }, { ...c, payerEmail: 'payer@example.com; v@example.com' })).toEqual([]);
  });
});

describe('nextStep', () => {
  it.each([
    [{ kind: 'sent', response: null }, 1, 0, { outcome: 'sent' }],
    [{ kind: 'refused', error: 'x' }, 1, 0, { outcome: 'failed' }],
    // In doubt ends the message whatever its age: never resent.
    [{ kind: 'in_doubt', error: 'x' }, 1, 0, { outcome: 'in_doubt' }],
    [{ kind: 'transient', error: 'x' }, 1, 0, { outcome: 'retry', delayMs: 100 }],
    [{ kind: 'transient', error: 'x' }, 3, 0, { outcome: 'retry', delayMs: 400 }],
    [{ kind: 'transient', error: 'x' }, 10, 0, { outcome: 'retry', delayMs: 1000 }],
    [{ kind: 'transient', error: 'x' }, 10, 4000, { outcome: 'retry', delayMs: 1000 }],
    [{ kind: 'transient', error: 'x' }, 10, 4001, { outcome: 'abandoned' }],
  ] as const)('%j after attempt %d at age %d → %j', (result, attempt, age, expected) => {
    expect(nextStep(result, attempt, age, policy)).toEqual(expected);
  });

  it('with the defaults, about a day of attempts', () => {
    const p = { baseMs: 60_000, maxMs: 3_600_000, giveUpMs: 86_400_000 };
    let age = 0;
    let n = 0;
    for (;;) {
      n++;
      const s = nextStep({ kind: 'transient', error: 'x' }, n, age, p);
      if (s.outcome !== 'retry') break;
      age += s.delayMs;
    }
    expect(age).toBeGreaterThan(23 * 3_600_000);
    expect(age).toBeLessThanOrEqual(24 * 3_600_000);
    expect(n).toBeGreaterThan(20);
  });
});

describe('messageIdFor', () => {
  it('the row id on the sender domain, else the public host', () => {
    expect(messageIdFor('abc', 'Shop <receipts@mail.example.com>', 'http://localhost:3000')).toBe('<abc@mail.example.com>');
    expect(messageIdFor('abc', 'receipts@example.org', 'http://localhost:3000')).toBe('<abc@example.org>');
    expect(messageIdFor('abc', null, 'https://pay.example.net')).toBe('<abc@pay.example.net>');
  });
});

describe('resendRefusal', () => {
  const req = (status: string, proofStatus: string, claimLost = false, merchantEmail: string | null = 'm@example.com') => ({ status, proofStatus, claimLost, merchantEmail });
  const verified = req('opened', 'verified');
  const payable = req('opened', 'none');
  it.each([
    ['receipt', 'failed', 'failed', verified, false, null],
    ['merchant_note', 'abandoned', 'abandoned', req('expired', 'verified'), false, null],
    ['receipt', 'abandoned', null, verified, false, null],
    ['receipt', 'failed', 'in_doubt', verified, false, /may have reached the recipient.*allow_duplicate/],
    ['receipt', 'failed', 'in_doubt', verified, true, null],
    ['receipt', 'pending', 'retry', verified, true, /still being sent/],
    ['receipt', 'pending', null, verified, false, /still being sent/],
    ['receipt', 'sent', 'sent', verified, true, /was sent/],
    ['receipt', 'sent', 'sent', verified, false, /was sent/],
    // The message must still fit its request: no receipt or note once finality lost the claim (it stays verified).
    ['receipt', 'failed', 'failed', req('opened', 'verified', true), true, /lost to a reorg/],
    ['merchant_note', 'abandoned', 'abandoned', req('expired', 'verified', true), false, /lost to a reorg/],
    ['receipt', 'failed', 'failed', req('opened', 'attached'), false, /not verified/],
    // A merchant's note goes to the merchant's email as it is now: none, no note (a receipt does not care).
    ['merchant_note', 'failed', 'failed', req('opened', 'verified', false, null), false, /no email address/],
    ['receipt', 'failed', 'failed', req('opened', 'verified', false, null), false, null],
    // A charge notice only while the charge waits for a payment.
    ['charge_notice', 'failed', 'failed', payable, false, null],
    ['charge_notice', 'failed', 'failed', req('requested', 'none'), false, null],
    ['charge_notice', 'failed', 'failed', req('opened', 'verified'), false, /the charge is paid/],
    ['charge_notice', 'failed', 'failed', req('opened', 'attached'), false, /being verified/],
    ['charge_notice', 'abandoned', 'abandoned', req('expired', 'none'), false, /can no longer be paid \(expired\)/],
    ['charge_notice', 'failed', 'failed', req('voided', 'none'), true, /can no longer be paid \(voided\)/],
    // In doubt is judged first: the operator learns that before anything about the request.
    ['charge_notice', 'failed', 'in_doubt', req('voided', 'none'), false, /allow_duplicate/],
  ] as const)('%s %s after %s, request %j, allow_duplicate %s → %s', (kind, status, last, request, allow, expected) => {
    const refusal = resendRefusal({ kind, status, lastOutcome: last }, request, allow);
    if (expected === null) expect(refusal).toBeNull();
    else expect(refusal).toMatch(expected);
  });
});

describe('retriesSince', () => {
  it('the give-up age counts from the creation until an operator resends it, then from the resend', () => {
    const createdAt = new Date('2026-11-01T00:00:00Z');
    const resentAt = new Date('2026-11-03T00:00:00Z');
    expect(retriesSince({ createdAt, resentAt: null })).toBe(createdAt);
    expect(retriesSince({ createdAt, resentAt })).toBe(resentAt);
  });

  it("gives a resent message's transient failure a retry where the age since creation would abandon it", () => {
    const now = Date.parse('2026-11-03T00:00:01Z');
    const n = { createdAt: new Date('2026-11-01T00:00:00Z'), resentAt: new Date('2026-11-03T00:00:00Z') };
    const transient = { kind: 'transient', error: '451' } as const;
    expect(nextStep(transient, 3, now - n.createdAt.getTime(), policy)).toEqual({ outcome: 'abandoned' });
    expect(nextStep(transient, 3, now - retriesSince(n).getTime(), policy)).toEqual({ outcome: 'retry', delayMs: 400 });
  });
});
