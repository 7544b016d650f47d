import { readFileSync } from 'node:fs';
import { Wallet } from 'ethers';
import type { Browser, Page } from 'playwright-core';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import { PAGE_CSP } from '../../src/modules/pages/page-security';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import type { TestService } from '../support/app';
import { launchBrowser, openContext, screenshots, TestWallet, unlabelledControls, waitForText } from '../support/browser';
import { foreignRequests, overflowsSideways, signInThroughPage, startAtOwnOrigin, textOf as text } from '../support/dashboard-browser';
import { closeSql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/**
 * Issue 11, the merchant dashboard UI in Debian's Chromium: sign-in with an injected wallet whose key stays
 * in this process, every page at 390 px, a request created, listed, detailed and paid, filters, the CSV,
 * settings, sign-out. The service is real (HTTP and worker), PUBLIC_URL its own address.
 */
let svc: TestService;
let partner: TestPartner;
let browser: Browser;
let merchantKey: string;
let merchantId: string;
let origin: string;

beforeAll(async () => {
  ({ svc, origin } = await startAtOwnOrigin({ worker: true, env: { VERIFY_POLL_MS: '200', CHAIN_SCAN_INTERVAL_MS: '500' } }));
  partner = await createPartner(svc, { default_currency: 'eur' });
  const wallet = Wallet.createRandom();
  merchantKey = wallet.privateKey;
  merchantId = (await createOnboardedMerchant(svc, partner.testKey, { display_name: 'Kiosk & Co' }, wallet as unknown as Wallet)).id;
  browser = await launchBrowser();
}, 60000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await closeSql();
});

const merchantWallet = () => new TestWallet(merchantKey, testEnv().rpcUrl);

/** A signed-in page of the demo merchant, with the checks every page must pass collected as it goes. */
async function signedIn(path = '/dashboard') {
  const wallet = merchantWallet();
  const { context, page, problems } = await openContext(browser, wallet);
  const foreign = foreignRequests(context, origin);
  const message = await signInThroughPage(page, svc, wallet, path);
  return { context, page, problems, foreign, wallet, message };
}

describe('the merchant dashboard', () => {
  it('signs in with the wallet (SIWE for PUBLIC_URL/dashboard) and shows every page at 390 px', async () => {
    const { context, page, problems, foreign, wallet, message } = await signedIn();
    try {
      expect(message).toContain(`localhost:${new URL(origin).port} wants you to sign in with your Ethereum account:\n${wallet.address}\n`);
      expect(message).toContain(`URI: ${origin}/dashboard\n`);
      expect(message).toContain('Chain ID: 31337\n');
      expect(await text(page, '#dash-merchant-name')).toBe('Kiosk & Co');
      expect(await page.locator('#dash-test-mode').isVisible()).toBe(true);
      expect(await page.locator('#nav-plans').textContent()).toContain('Plans');

      for (const [path, name] of [
        ['/dashboard', 'home'],
        ['/dashboard/requests', 'requests'],
        ['/dashboard/requests/new', 'new-request'],
        ['/dashboard/settings', 'settings'],
        ['/dashboard/handle', 'handle'],
        ['/dashboard/plans', 'plans'],
      ]) {
        const res = await page.goto(`${origin}${path}`);
        expect(res!.status()).toBe(200);
        expect(res!.headers()['content-security-policy']).toBe(PAGE_CSP);
        await page.locator('#dash-content').waitFor({ state: 'visible' });
        await waitFor(async () => (await text(page, '#dash-progress')) === '');
        expect(await text(page, '#dash-error')).toBe('');
        expect(await overflowsSideways(page)).toBe(false);
        expect(await unlabelledControls(page)).toEqual([]);
        await screenshots(page, `dashboard-${name}`);
      }
      expect(await text(page, '#plans-title')).toBe('Recurring plans');
      expect(problems).toEqual([]);
      expect(foreign).toEqual([]);
    } finally {
      await context.close();
      wallet.close();
    }
  });

  it('creates a request that shows in the list and its detail, with metadata null for the partner, and then paid', async () => {
    const { context, page, problems, foreign, wallet } = await signedIn('/dashboard/requests/new');
    try {
      expect(await text(page, 'label[for="new-amount"]')).toBe('Amount in EUR');
      await page.locator('#new-amount').fill('12.3.4');
      await page.locator('#new-submit').click();
      await waitForText(page, '#new-amount-error', 'Enter a positive amount in EUR');
      await page.locator('#new-amount').fill('12.34');
      await page.locator('#new-memo').fill('Table 4 <espresso>');
      await page.locator('#new-customer-name').fill('Ada');
      await page.locator('#new-customer-email').fill('ada@example.com');
      await page.locator('#new-submit').click();
      await page.waitForURL(/\/dashboard\/requests\/[0-9a-f-]{36}$/);
      const id = page.url().split('/').pop()!;
      await page.locator('#dash-content').waitFor({ state: 'visible' });
      await waitForText(page, '#request-amount', '€12.34');
      expect(await text(page, '#request-state')).toBe('Waiting for the customer');
      // €12.34 at 0.92 EUR a token, rounded up to the token's 6 decimals; shown exactly, not in base units.
      expect(await text(page, '#request-token-amount')).toBe('13.413044 TUSD');
      expect(await text(page, '#request-fields')).toContain('Table 4 <espresso>');
      expect(await text(page, '#request-fields')).toContain('Dashboard');
      expect(await text(page, '#customer-fields')).toContain('ada@example.com');
      expect(await page.locator('#cancel-button').isVisible()).toBe(true);
      expect(await overflowsSideways(page)).toBe(false);
      await screenshots(page, 'dashboard-request-detail');

      // The partner sees it like any other request, metadata null (spec §6.3).
      const seen = await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey });
      expect(seen.body).toMatchObject({ request_id: id, fiat_amount: 1234, fiat_currency: 'eur', account_id: merchantId, metadata: null });

      await page.locator('#nav-requests').click();
      await page.locator(`#request-list li[data-request-id="${id}"]`).waitFor();
      expect(await text(page, `#request-list li[data-request-id="${id}"]`)).toContain('€12.34');

      // Paid by a real transfer and a proof on the pay API; the detail then reads "Paid".
      const chain = testEnv();
      const payer = DEV_KEYS[1];
      await mint(chain.rpcUrl, chain.token, new Wallet(payer).address, BigInt(seen.body.amount));
      const { txHash } = await transferToken(chain.rpcUrl, chain.token, payer, wallet.address, BigInt(seen.body.amount));
      expect((await call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: txHash } })).status).toBe(200);
      await waitFor(async () => (await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey })).body.proof_status === 'verified', 30000);
      await page.goto(`${origin}/dashboard/requests/${id}`);
      await waitForText(page, '#request-state', 'Paid');
      expect(await text(page, '#request-fields')).toContain(txHash);
      expect(await page.locator('#cancel-button').isVisible()).toBe(false);
      await page.goto(`${origin}/dashboard`);
      await page.locator('#totals-body tr[data-status="paid"]').waitFor();
      expect(await text(page, '#totals-body tr[data-status="paid"] td.num:first-of-type')).toBe('1');
      await screenshots(page, 'dashboard-home-paid');
      expect(problems).toEqual([]);
      expect(foreign).toEqual([]);
    } finally {
      await context.close();
      wallet.close();
    }
  });

  it('filters the list, cancels a request, and downloads the CSV of the filtered list', async () => {
    const fromApi = await mustCreateRequest(svc, partner.testKey, { account_id: merchantId, fiat_amount_int: 777, metadata: { order: 'A-7' } });
    const { context, page, problems, foreign, wallet } = await signedIn('/dashboard/requests/new');
    try {
      await page.locator('#new-amount').fill('5');
      await page.locator('#new-submit').click();
      await page.waitForURL(/\/dashboard\/requests\/[0-9a-f-]{36}$/);
      const cancelled = page.url().split('/').pop()!;
      await page.locator('#cancel-button').waitFor({ state: 'visible' });
      page.once('dialog', (d) => void d.accept());
      await page.locator('#cancel-button').click();
      await waitForText(page, '#request-state', 'Cancelled');
      expect(await page.locator('#cancel-button').isVisible()).toBe(false);

      await page.goto(`${origin}/dashboard/requests`);
      await page.locator(`#request-list li[data-request-id="${fromApi.request_id}"]`).waitFor();
      await page.locator('#filter-status').selectOption('voided');
      await page.locator('#filter-source').selectOption('dashboard');
      await page.locator('#filter-apply').click();
      await page.waitForURL(/status=voided/);
      await page.locator(`#request-list li[data-request-id="${cancelled}"]`).waitFor();
      const ids = await page.locator('#request-list li').evaluateAll((els) => els.map((e) => e.getAttribute('data-request-id')));
      expect(ids).toEqual([cancelled]);
      expect(await page.locator('#filter-status').inputValue()).toBe('voided');
      await screenshots(page, 'dashboard-requests-filtered');

      // Source partner: the API's request, not the dashboard's.
      await page.goto(`${origin}/dashboard/requests?source=partner`);
      await page.locator(`#request-list li[data-request-id="${fromApi.request_id}"]`).waitFor();
      expect(await page.locator(`#request-list li[data-request-id="${cancelled}"]`).count()).toBe(0);

      // The CSV link carries the same filters; the download is the filtered list.
      await page.goto(`${origin}/dashboard/requests?status=voided&source=dashboard`);
      await page.locator(`#request-list li[data-request-id="${cancelled}"]`).waitFor();
      expect(await page.locator('#csv-link').getAttribute('href')).toBe('/dashboard/api/requests.csv?status=voided&source=dashboard');
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#csv-link').click()]);
      const csv = readFileSync((await download.path())!, 'utf8').trim().split(/\r?\n/);
      expect(csv[0]).toBe('request_id,created_at,status,proof_status,fiat_amount,fiat_currency,amount,asset_id,tx_hash,proof_verified_at,source,plan_id,memo');
      expect(csv).toHaveLength(2);
      // €5 at 0.92: 5.434783 tokens (rounded up), 5434783 base units.
      expect(csv[1]).toMatch(new RegExp(`^${cancelled},[^,]+,voided,none,500,eur,5434783,[^,]+,,,dashboard,,$`));
      expect(problems).toEqual([]);
      expect(foreign).toEqual([]);
    } finally {
      await context.close();
      wallet.close();
    }
  });

  it('saves settings, explains a bad field in words, and signs out', async () => {
    const { context, page, problems, foreign, wallet } = await signedIn('/dashboard/settings');
    try {
      await waitFor(async () => (await page.locator('#settings-display-name').inputValue()) === 'Kiosk & Co');
      await page.locator('#settings-country').fill('1x');
      await page.locator('#settings-save').click();
      await waitForText(page, '#settings-country-error', 'two-letter country code');
      await page.locator('#settings-country').fill('de');
      await page.locator('#settings-website').fill('https://kiosk.example');
      await page.locator('#settings-display-name').fill('Kiosk am Markt');
      await page.locator('#settings-save').click();
      await waitForText(page, '#dash-progress', 'Settings saved.');
      const me = await call(svc.publicUrl, 'GET', `/api/v1/merchants/${merchantId}`, { key: partner.testKey });
      expect(me.body).toMatchObject({ display_name: 'Kiosk am Markt', country: 'DE', website: 'https://kiosk.example' });
      await page.reload();
      await waitFor(async () => (await page.locator('#settings-country').inputValue()) === 'DE');
      expect(await text(page, '#dash-merchant-name')).toBe('Kiosk am Markt');
      await screenshots(page, 'dashboard-settings-saved');
      // Restore the name the other tests expect, from a new tab: its sessionStorage is empty, so the CSRF
      // token that the change needs comes from GET /dashboard/api/session.
      const tab = await context.newPage();
      await tab.goto(`${origin}/dashboard/settings`);
      await waitFor(async () => (await tab.locator('#settings-display-name').inputValue()) === 'Kiosk am Markt');
      expect(await tab.evaluate(() => sessionStorage.length)).toBe(1);
      await tab.locator('#settings-display-name').fill('Kiosk & Co');
      await tab.locator('#settings-save').click();
      await waitForText(tab, '#dash-progress', 'Settings saved.');
      await tab.close();

      await page.locator('#sign-out-button').click();
      await page.waitForURL(/\/dashboard\/sign-in$/);
      await page.goto(`${origin}/dashboard`);
      await page.waitForURL(/\/dashboard\/sign-in\?next=%2Fdashboard$/);
      expect(problems).toEqual([]);
      expect(foreign).toEqual([]);
    } finally {
      await context.close();
      wallet.close();
    }
  });

  it('says in words when the wallet is not a merchant, and when the merchant is disabled', async () => {
    const stranger = new TestWallet(Wallet.createRandom().privateKey, testEnv().rpcUrl);
    const { context, page, problems } = await openContext(browser, stranger);
    try {
      await page.goto(`${origin}/dashboard/sign-in`);
      await page.locator('#sign-in-button').click();
      await waitForText(page, '#dash-error', 'does not belong to a merchant');
      await screenshots(page, 'dashboard-sign-in-not-a-merchant');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      stranger.close();
    }

    expect((await admin(svc, 'POST', `/merchants/${merchantId}/disable`)).status).toBe(200);
    const signed = await signedIn('/dashboard/requests/new');
    try {
      expect(await signed.page.locator('#dash-disabled').isVisible()).toBe(true);
      expect(await signed.page.locator('#new-submit').isDisabled()).toBe(true);
      await screenshots(signed.page, 'dashboard-disabled');
      expect(signed.problems).toEqual([]);
    } finally {
      await signed.context.close();
      signed.wallet.close();
      await admin(svc, 'POST', `/merchants/${merchantId}/enable`);
    }
  });
});
