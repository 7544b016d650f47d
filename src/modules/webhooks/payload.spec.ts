import { createHmac } from 'node:crypto';
import { verifyWebhook } from '../../../sdk/webhook-verify/src/index';
import { webhookBody, webhookHeaders, type DeliverySource } from './payload';

const source: DeliverySource = {
  eventId: '7d6f1f0e-3a47-4b8e-9a51-6f1d2c3b4a59',
  event: 'payment.proof_verified',
  partnerId: '11111111-1111-4111-8111-111111111111',
  requestId: '22222222-2222-4222-8222-222222222222',
  merchantId: '33333333-3333-4333-8333-333333333333',
  proofStatus: 'verified',
  proofSource: 'chain_scan',
  txHash: `0x${'ab'.repeat(32)}`,
  payerAddress: `0x${'cd'.repeat(20)}`,
  metadata: { order_id: 'A-1001', note: 'naïve "quoted" ✓' },
  recordedAt: new Date('2026-01-02T03:04:05.678Z'),
  testMode: false,
};
const NEW = 'a'.repeat(64);
const OLD = 'b'.repeat(64);

describe('webhookBody', () => {
  it('holds the fields of spec §6.3 plus test_mode, in a fixed order', () => {
    const body = webhookBody(source);
    expect(Object.keys(JSON.parse(body))).toEqual([
      'event', 'delivery_id', 'partner_id', 'request_id', 'account_id', 'proof_status', 'proof_source', 'tx_hash',
      'payer_address', 'metadata', 'timestamp', 'test_mode',
    ]);
    expect(JSON.parse(body)).toEqual({
      event: 'payment.proof_verified',
      delivery_id: source.eventId,
      partner_id: source.partnerId,
      request_id: source.requestId,
      account_id: source.merchantId,
      proof_status: 'verified',
      proof_source: 'chain_scan',
      tx_hash: source.txHash,
      payer_address: source.payerAddress,
      metadata: source.metadata,
      timestamp: '2026-01-02T03:04:05.678Z',
      test_mode: false,
    });
  });

  it('passes nulls through', () => {
    const b = JSON.parse(webhookBody({ ...source, txHash: null, payerAddress: null, proofSource: null, metadata: null }));
    expect(b).toMatchObject({ tx_hash: null, payer_address: null, proof_source: null, metadata: null });
  });
});

describe('webhookHeaders', () => {
  const body = webhookBody(source);

  it('carries exactly the headers of spec §6.2', () => {
    const h = webhookHeaders(source, body, [NEW], 1_760_000_000);
    expect(h).toEqual({
      'content-type': 'application/json',
      'x-service-signature': `v1=${createHmac('sha256', NEW).update(`1760000000.${body}`).digest('hex')},t=1760000000`,
      'x-service-event': 'payment.proof_verified',
      'x-service-delivery': source.eventId,
      'user-agent': 'Service-Webhook/1.0',
    });
  });

  it('signs once per active secret, the new first, and verifies with either', () => {
    const h = webhookHeaders(source, body, [NEW, OLD], 1_760_000_000);
    const sig = h['x-service-signature'];
    expect(sig).toBe(
      `v1=${createHmac('sha256', NEW).update(`1760000000.${body}`).digest('hex')},` +
        `v1=${createHmac('sha256', OLD).update(`1760000000.${body}`).digest('hex')},t=1760000000`,
    );
    expect(verifyWebhook(body, sig, OLD, { now: 1_760_000_100 }).delivery_id).toBe(source.eventId);
    expect(verifyWebhook(Buffer.from(body), sig, NEW, { now: 1_760_000_100 }).delivery_id).toBe(source.eventId);
  });
});
