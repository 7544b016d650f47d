import type { Plan } from '../plans/domain/plan';
import type { PaymentRequest } from '../requests/domain/payment-request';
import { renderPlanPage } from './plan-page.view';

const NOW = new Date('2027-02-12T00:00:00.000Z');
const plan = {
  id: 'p', title: 'Gym', fiatAmount: 2500, fiatCurrency: 'usd', interval: 'month', intervalCount: 1, startAt: new Date('2027-01-10T00:00:00.000Z'),
  maxCharges: null, testMode: true, status: 'active', pauseReason: null, nextChargeAt: new Date('2027-03-10T00:00:00.000Z'), chargesCreated: 2,
} as Plan;
const charge = (over: Partial<PaymentRequest>) =>
  ({
    id: '11111111-1111-4111-8111-111111111111', status: 'opened', proofStatus: 'none', periodIndex: 1,
    expiresAt: new Date('2027-02-17T00:00:00.000Z'), claimUntil: new Date('2027-02-18T00:00:00.000Z'), ...over,
  }) as PaymentRequest;
const page = (open: PaymentRequest) =>
  renderPlanPage({ plan, merchantName: 'Gym & Co', charges: [open], openCharge: open }, 'https://pay.example', '/assets/pages.css', NOW);

describe('the payer plan page: the open charge', () => {
  it('an unpaid one is due, with a Pay button to its pay page', () => {
    const html = page(charge({}));
    expect(html).toContain('<h2 id="open-heading">Payment due</h2>');
    expect(html).toContain('href="https://pay.example/11111111-1111-4111-8111-111111111111">Pay $25.00</a>');
  });

  it('one whose payment is being confirmed offers no second payment: it links to the payment, not "Pay"', () => {
    const html = page(charge({ proofStatus: 'attached' }));
    expect(html).toContain('<h2 id="open-heading">Payment being confirmed</h2>');
    expect(html).not.toContain('Payment due');
    expect(html).not.toMatch(/>Pay \$25\.00</);
    expect(html).toContain('href="https://pay.example/11111111-1111-4111-8111-111111111111">View the payment</a>');
  });
});
