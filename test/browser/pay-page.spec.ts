import { randomUUID } from 'node:crypto';
import { Interface, JsonRpcProvider, Transaction, Wallet } from 'ethers';
import type { Browser } from 'playwright-core';
import { DEV_KEYS, deployToken, findFreePort, mine, mint, sendTokenTransfer, setAutomine, startLocalNode, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { PAGE_CSP } from '../../src/modules/pages/page-security';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { launchBrowser, openContext, screenshots, TestWallet, unlabelledControls, waitForText } from '../support/browser';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { sleep, waitFor } from '../support/wait';

/**
 * Issue 5, the pay page: the real service (HTTP and worker), its own Hardhat node and token, Debian's
 * Chromium, and a wallet whose key stays in this process. CONFIRMATIONS = 3, so "attached" is visible
 * between the transfer and the blocks mined on top of it.
 */
const CONFIRMATIONS = 3;
const PAYER = DEV_KEYS[1];
const MERCHANT_NAME = `Ben & Jerry's <Café>`;
let node: LocalNode;
let token: string;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };
let browser: Browser;

beforeAll(async () => {
  node = await startLocalNode({ port: await findFreePort() });
  token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  await mint(node.url, token, new Wallet(PAYER).address, 10n ** 15n);
  const port = await findFreePort();
  svc = await startService({
    worker: true,
    env: {
      PORT: String(port),
      PUBLIC_URL: `http://localhost:${port}`,
      CHAIN_TEST_RPC_URL: node.url,
      CHAIN_TEST_TOKEN_ADDRESS: token,
      CHAIN_TEST_CONFIRMATIONS: String(CONFIRMATIONS),
      VERIFY_POLL_MS: '100',
      CHAIN_SCAN_INTERVAL_MS: '300',
      EXPIRY_SWEEP_INTERVAL_MS: '300',
    },
  });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey, { display_name: MERCHANT_NAME });
  browser = await launchBrowser();
}, 90000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await node?.stop();
  await closeSql();
});

let cents = 1000;
/** A fresh request; a distinct price each time keeps amounts apart without relying on the uniqueness rule. */
async function newRequest(body: Record<string, unknown> = {}): Promise<{ id: string; amount: bigint; fiat: number }> {
  const fiat = (cents += 1111);
  const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: fiat, ...body });
  return { id: r.request_id, amount: BigInt(r.amount), fiat };
}

const apiView = async (id: string) => (await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey })).body;
const payUrl = (id: string) => `${svc.publicUrl}/pay/${id}`;
const events = async (id: string) =>
  (await sql<{ event: string }>(`SELECT event FROM webhook_events WHERE request_id = $1 ORDER BY recorded_at`, [id])).map((e) => e.event);

/** Whether the element exists and is visible (not `hidden`, not inside a hidden part). */
const visible = (page: import('playwright-core').Page, selector: string) => page.locator(selector).isVisible();

describe('the pay page', () => {
  it('pays with the wallet: open → opened, pay → transfer mined and proof attached, confirmations → paid', async () => {
    const r = await newRequest({ memo: 'Order #42: two scoops' });
    expect((await apiView(r.id)).status).toBe('requested');
    // The wallet starts on Ethereum and does not know the local chain: switch fails with 4902, then add.
    const wallet = new TestWallet(PAYER, node.url, { chainId: 1n, knownChains: [1n] });
    const { context, page, problems } = await openContext(browser, wallet);
    try {
      const response = await page.goto(payUrl(r.id));
      expect(response!.status()).toBe(200);
      expect(response!.headers()['content-security-policy']).toBe(PAGE_CSP);

      // The page's script reported the open.
      await waitFor(async () => (await apiView(r.id)).status === 'opened');
      expect(await page.locator('#merchant-name').textContent()).toBe(MERCHANT_NAME);
      expect(await page.locator('#fiat-amount').textContent()).toBe(`$${(r.fiat / 100).toFixed(2)}`);
      expect(await page.locator('#token-amount').textContent()).toBe(`${(Number(r.amount) / 1e6).toString()} TUSD`);
      expect(await page.locator('#network').textContent()).toBe('Local test chain (chain 31337)');
      expect(await page.locator('#recipient').textContent()).toBe(merchant.wallet.address.toLowerCase());
      expect(await page.locator('#exact-amount').textContent()).toBe((Number(r.amount) / 1e6).toString());
      expect(await page.locator('.qr-code svg path').count()).toBeGreaterThan(0);
      expect(await page.locator('#countdown').textContent()).toMatch(/^Expires in (1 h 00 min|59:\d\d)$/);
      expect(await page.locator('#status-title').textContent()).toBe('Waiting for payment');
      expect(await unlabelledControls(page)).toEqual([]);
      await screenshots(page, 'pay-01-open');

      // The copy button puts the recipient on the clipboard and says so.
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.publicUrl });
      await page.locator('#copy-recipient').click();
      await waitForText(page, '#copy-recipient', 'Copied');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(merchant.wallet.address.toLowerCase());
      expect(await page.locator('#copy-status').textContent()).toBe('Address copied.');

      await page.locator('#pay-button').click();
      const attached = await waitFor(async () => {
        const v = await apiView(r.id);
        return v.proof_status === 'attached' ? v : null;
      });
      expect(wallet.methods()).toEqual([
        'eth_requestAccounts', 'eth_chainId', 'wallet_switchEthereumChain', 'wallet_addEthereumChain', 'eth_chainId', 'eth_sendTransaction',
      ]);
      // The transaction the wallet sent is the token's transfer of exactly `amount` to the recipient, and mined.
      const provider = new JsonRpcProvider(node.url);
      try {
        const tx = (await provider.getTransaction(attached.tx_hash))!;
        expect(tx.to!.toLowerCase()).toBe(token);
        const call = new Interface(['function transfer(address to, uint256 amount)']).parseTransaction({ data: tx.data })!;
        expect(call.name).toBe('transfer');
        expect((call.args[0] as string).toLowerCase()).toBe(merchant.wallet.address.toLowerCase());
        expect(call.args[1]).toBe(r.amount);
        expect((await provider.getTransactionReceipt(attached.tx_hash))!.status).toBe(1);
      } finally {
        provider.destroy();
      }
      await waitForText(page, '#status-title', 'Payment submitted');
      expect(await visible(page, '#pay-button')).toBe(false);
      await screenshots(page, 'pay-02-confirming');

      await mine(node.url, CONFIRMATIONS - 1);
      await waitForText(page, '#status-title', 'Paid');
      expect(await page.locator('#paid-tx-hash').textContent()).toBe(attached.tx_hash);
      expect(await visible(page, '#pay-section')).toBe(false);
      expect(await visible(page, '#proof-section')).toBe(false);
      await screenshots(page, 'pay-03-paid');

      const final = await apiView(r.id);
      expect(final.proof_status).toBe('verified');
      expect(final.status).toBe('opened');
      expect(await events(r.id)).toEqual(['payment.proof_attached', 'payment.proof_verified']);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      wallet.close();
    }
  });

  it('says in words why a hash does not pay, and keeps asking while the network does not know a hash yet', async () => {
    const r = await newRequest();
    const { context, page, problems } = await openContext(browser);
    const provider = new JsonRpcProvider(node.url, undefined, { cacheTimeout: -1 });
    try {
      await page.goto(payUrl(r.id));
      await waitFor(async () => (await apiView(r.id)).status === 'opened');

      // A mined transfer of one unit too little: refused with the pay rule's reason, in words.
      const under = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount - 1n);
      await page.locator('#tx-hash').fill(under.txHash);
      await page.locator('#proof-form button[type=submit]').click();
      await waitForText(page, '#tx-hash-error', 'it sends less than the amount requested');
      expect(await page.locator('#tx-hash').getAttribute('aria-invalid')).toBe('true');
      expect((await apiView(r.id)).proof_status).toBe('none');
      expect(await events(r.id)).toEqual([]);
      await screenshots(page, 'pay-06-does-not-pay');

      // Signed but not yet broadcast: the server answers tx_not_found and the page keeps trying.
      const payer = new Wallet(PAYER, provider);
      const data = new Interface(['function transfer(address,uint256)']).encodeFunctionData('transfer', [merchant.wallet.address, r.amount]);
      const raw = await payer.signTransaction(await payer.populateTransaction({ to: token, data, gasLimit: 100000n }));
      const hash = Transaction.from(raw).hash!;
      await page.locator('#tx-hash').fill(hash);
      await page.locator('#proof-form button[type=submit]').click();
      await waitForText(page, '#proof-message', 'Waiting for the network to see your transaction');
      expect((await apiView(r.id)).proof_status).toBe('none');
      await provider.broadcastTransaction(raw);
      await waitForText(page, '#status-title', 'Payment submitted', 20000);
      expect(await apiView(r.id)).toMatchObject({ proof_status: 'attached', tx_hash: hash });
      await mine(node.url, CONFIRMATIONS);
      await waitForText(page, '#status-title', 'Paid');
      expect(await events(r.id)).toEqual(['payment.proof_attached', 'payment.proof_verified']);
      expect(problems).toEqual([]);
    } finally {
      provider.destroy();
      await context.close();
    }
  });

  it('keeps offering payment when the attached hash is known not to pay, and says expired once the window closed', async () => {
    // Anyone can attach a pending hash (DESIGN §7): here a stranger's transaction that pays nothing. It used to
    // read "Payment submitted" for good, with no QR, address or wallet button, and "being confirmed" even
    // after the request expired.
    const r = await newRequest();
    const stranger = new Wallet(DEV_KEYS[2]);
    await mint(node.url, token, stranger.address, 10n);
    await setAutomine(node.url, false);
    try {
      const hash = await sendTokenTransfer(node.url, token, DEV_KEYS[2], stranger.address, 1n);
      expect((await call(svc.publicUrl, 'POST', `/pay/api/${r.id}/proof`, { body: { tx_hash: hash } })).status).toBe(200);
    } finally {
      await setAutomine(node.url, true);
    }
    await mine(node.url, CONFIRMATIONS);
    await waitFor(async () => (await call(svc.publicUrl, 'GET', `/pay/api/${r.id}`)).body.proof_note === 'no_transfer_to_recipient');
    const { context, page, problems } = await openContext(browser);
    try {
      await page.goto(payUrl(r.id));
      expect(await page.locator('#status-title').textContent()).toBe('Waiting for payment');
      for (const part of ['#pay-button', '#pay-section', '.qr-code', '#recipient', '#countdown']) expect(await visible(page, part)).toBe(true);
      await waitForText(page, '#tx-hash-error', 'it sends nothing to this merchant’s address');
      expect(await apiView(r.id)).toMatchObject({ status: 'opened', proof_status: 'attached' });

      // Past expires_at, in the claim window (the request still reads opened: its attached hash has until the
      // window closes): no payment is offered any more.
      await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 minute', claim_until = now() + interval '1 hour' WHERE id = $1`, [r.id]);
      await waitForText(page, '#status-title', 'This payment request has expired');
      for (const part of ['#pay-button', '#pay-section', '.qr-code', '#countdown']) expect(await visible(page, part)).toBe(false);
      expect(await visible(page, '#proof-form')).toBe(true);
      expect(await apiView(r.id)).toMatchObject({ status: 'opened', proof_status: 'attached' });
      // The window closed: expired for good.
      await sql(`UPDATE payment_requests SET expires_at = now() - interval '2 minutes', claim_until = now() - interval '1 minute' WHERE id = $1`, [r.id]);
      await waitFor(async () => (await apiView(r.id)).status === 'expired');
      await page.reload();
      expect(await page.locator('#status-title').textContent()).toBe('This payment request has expired');
      for (const part of ['#pay-button', '#pay-section', '.qr-code', '#countdown']) expect(await visible(page, part)).toBe(false);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('takes a pasted transaction hash of a transfer sent elsewhere, and shows it verified', async () => {
    const r = await newRequest();
    const { context, page, problems } = await openContext(browser);
    try {
      await page.goto(payUrl(r.id));
      await waitFor(async () => (await apiView(r.id)).status === 'opened');

      await page.locator('#tx-hash').fill('0x1234');
      await page.locator('#proof-form button[type=submit]').click();
      await waitForText(page, '#tx-hash-error', 'does not look like a transaction hash');
      expect(await page.locator('#tx-hash').getAttribute('aria-invalid')).toBe('true');
      await screenshots(page, 'pay-04-bad-hash');

      const sent = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount);
      await page.locator('#tx-hash').fill(sent.txHash);
      await page.locator('#proof-form button[type=submit]').click();
      await waitForText(page, '#status-title', 'Payment submitted');
      expect((await apiView(r.id)).proof_status).toBe('attached');
      await screenshots(page, 'pay-05-hash-submitted');

      await mine(node.url, CONFIRMATIONS - 1);
      await waitForText(page, '#status-title', 'Paid');
      const final = await apiView(r.id);
      expect(final.proof_status).toBe('verified');
      expect(final.tx_hash).toBe(sent.txHash);
      expect(await events(r.id)).toEqual(['payment.proof_attached', 'payment.proof_verified']);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('shows an expired request as expired and offers no payment', async () => {
    const r = await newRequest();
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 minute' WHERE id = $1`, [r.id]);
    const wallet = new TestWallet(PAYER, node.url);
    const { context, page, problems } = await openContext(browser, wallet);
    try {
      expect((await page.goto(payUrl(r.id)))!.status()).toBe(200);
      expect(await page.locator('#status-title').textContent()).toBe('This payment request has expired');
      for (const part of ['#pay-button', '#pay-section', '.qr-code', '#recipient', '#countdown']) expect(await visible(page, part)).toBe(false);
      await sleep(500); // the script's open report and first poll
      expect(await page.locator('#status-title').textContent()).toBe('This payment request has expired');
      expect(await visible(page, '#pay-button')).toBe(false);
      expect((await apiView(r.id)).status).toBe('expired');
      expect(wallet.calls).toEqual([]);
      await screenshots(page, 'pay-06-expired');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('turns to expired when the countdown runs out while the page is open', async () => {
    const r = await newRequest();
    await sql(`UPDATE payment_requests SET expires_at = now() + interval '4 seconds' WHERE id = $1`, [r.id]);
    const { context, page, problems } = await openContext(browser);
    try {
      await page.goto(payUrl(r.id));
      expect(await page.locator('#countdown').textContent()).toMatch(/^Expires in 0:0[1-4]$/);
      expect(await visible(page, '#pay-button')).toBe(true);
      await waitForText(page, '#status-title', 'This payment request has expired', 15000);
      expect(await visible(page, '#pay-button')).toBe(false);
      expect(await visible(page, '.qr-code')).toBe(false);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('shows a voided request as cancelled and offers no payment', async () => {
    // Cancel needs `requested` (spec §3): once a page has reported the open, the request cannot be voided.
    const r = await newRequest();
    const cancelled = await call(svc.publicUrl, 'POST', `/api/v1/requests/${r.id}/cancel`, { key: partner.testKey });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('voided');
    const wallet = new TestWallet(PAYER, node.url);
    const { context, page, problems } = await openContext(browser, wallet);
    try {
      expect((await page.goto(payUrl(r.id)))!.status()).toBe(200);
      expect(await page.locator('#status-title').textContent()).toBe('This payment request was cancelled');
      for (const part of ['#pay-button', '#pay-section', '.qr-code', '#recipient', '#countdown']) expect(await visible(page, part)).toBe(false);
      await sleep(500); // the script's open report (a no-op on a voided request) and first poll
      expect(await page.locator('#status-title').textContent()).toBe('This payment request was cancelled');
      expect((await apiView(r.id)).status).toBe('voided');
      expect(wallet.calls).toEqual([]);
      await screenshots(page, 'pay-07-voided');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('answers an unknown request id with the 404 page', async () => {
    const { context, page, problems } = await openContext(browser);
    try {
      for (const id of [randomUUID(), 'not-a-request']) {
        const response = await page.goto(payUrl(id));
        expect(response!.status()).toBe(404);
        expect(response!.headers()['content-type']).toMatch(/^text\/html/);
        expect(response!.headers()['content-security-policy']).toBe(PAGE_CSP);
        expect(await page.locator('h1').textContent()).toBe('Payment request not found');
      }
      await screenshots(page, 'pay-08-not-found');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe('a plain HTTP GET of the pay page', () => {
  it('renders the page with its security headers and leaves the status at requested', async () => {
    const r = await newRequest();
    const res = await fetch(payUrl(r.id));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(PAGE_CSP);
    expect(PAGE_CSP).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const body = await res.text();
    // Every interpolated value is escaped; there is no inline script or style anywhere.
    expect(body).toContain('Ben &amp; Jerry&#39;s &lt;Café&gt;');
    expect(body).not.toContain('<Café>');
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(body).not.toMatch(/\sstyle=|<style/);
    expect(body.replace(/xmlns="http:\/\/www.w3.org\/2000\/svg"/g, "")).not.toMatch(/https?:\/\/(?!localhost)/);

    for (const asset of body.match(/\/assets\/[a-z]+\.(?:js|css)\?v=[0-9a-f]+/g)!) {
      const a = await fetch(`${svc.publicUrl}${asset}`);
      expect(a.status).toBe(200);
      expect(a.headers.get('x-content-type-options')).toBe('nosniff');
      expect(a.headers.get('content-type')).toMatch(asset.includes('.css') ? /^text\/css/ : /^text\/javascript/);
    }
    await sleep(300);
    expect((await apiView(r.id)).status).toBe('requested');
  });
});
