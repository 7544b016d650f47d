import { Wallet } from 'ethers';
import type { Browser, Page } from 'playwright-core';
import { findFreePort } from '../../scripts/chain/local-node';
import { PAGE_CSP } from '../../src/modules/pages/page-security';
import { createOnboardedMerchant, createPartner, tokenOf, type TestPartner } from '../factories/partners';
import { createShellMerchant } from '../factories/merchants';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { launchBrowser, openContext, screenshots, TestWallet, unlabelledControls, waitForText } from '../support/browser';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';

/**
 * Issue 5, the onboarding page: from the onboarding_url a partner got to a complete merchant, in Chromium,
 * with the wallet's key in this process. PUBLIC_URL is the service's real address, so the onboarding_url
 * itself is what the browser opens, and the SIWE domain is the page's own host.
 */
let svc: TestService;
let partner: TestPartner;
let browser: Browser;

beforeAll(async () => {
  const port = await findFreePort();
  svc = await startService({ env: { PORT: String(port), PUBLIC_URL: `http://localhost:${port}` } });
  partner = await createPartner(svc);
  browser = await launchBrowser();
}, 60000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await closeSql();
});

const merchantView = async (id: string) => (await call(svc.publicUrl, 'GET', `/api/v1/merchants/${id}`, { key: partner.testKey })).body;
const newWallet = (opts: ConstructorParameters<typeof TestWallet>[2] = {}) =>
  new TestWallet(Wallet.createRandom().privateKey, testEnv().rpcUrl, opts);
const errorText = (page: Page) => page.locator('#onboarding-error').textContent();

describe('the onboarding page', () => {
  it('takes a merchant from the onboarding_url to complete, after which a request for it succeeds', async () => {
    const wallet = newWallet();
    const shell = await createShellMerchant(svc, partner.testKey, { display_name: 'Corner Shop', wallet_address: wallet.address });
    expect(shell.onboarding_url).toMatch(new RegExp(`^${svc.config.publicUrl}/onboarding/`));
    const { context, page, problems } = await openContext(browser, wallet);
    try {
      const response = await page.goto(shell.onboarding_url);
      expect(response!.status()).toBe(200);
      expect(response!.headers()['content-security-policy']).toBe(PAGE_CSP);
      expect(await page.locator('h1').textContent()).toBe('Set up payments for Corner Shop');
      expect(await page.locator('#display-name').isDisabled()).toBe(true);
      expect(await unlabelledControls(page)).toEqual([]);
      await screenshots(page, 'onboarding-01-start');

      // By keyboard: the connect button is the first thing Tab reaches.
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('connect-button');
      await page.keyboard.press('Enter');
      await page.locator('#wallet-connected').waitFor({ state: 'visible' });
      expect(await page.locator('#wallet-address').textContent()).toBe(wallet.address.toLowerCase());
      expect(wallet.methods()).toEqual(['eth_requestAccounts', 'eth_chainId', 'eth_chainId', 'personal_sign']);
      const signed = Buffer.from((wallet.calls[3].params[0] as string).slice(2), 'hex').toString('utf8');
      expect(signed).toContain(`${new URL(svc.config.publicUrl).host} wants you to sign in with your Ethereum account:\n${wallet.address}\n`);
      expect(signed).toContain(`URI: ${shell.onboarding_url}\n`);
      expect(signed).toContain('Chain ID: 31337\n');
      expect((await merchantView(shell.merchant_id)).wallet_address).toBe(wallet.address.toLowerCase());
      await screenshots(page, 'onboarding-02-wallet-connected');

      // Review and edit the details; finishing without the terms is refused in words, on the page.
      await page.locator('#display-name').fill('Corner Shop & Café');
      await page.locator('#business-name').fill('Corner Shop GmbH');
      await page.locator('#country').fill('de');
      await page.locator('#display-currency').selectOption('eur');
      await page.locator('#finish-button').click();
      await waitForText(page, '#accept-terms-error', 'Please read and accept the terms');
      expect((await merchantView(shell.merchant_id)).onboarding_status).toBe('incomplete');
      await screenshots(page, 'onboarding-03-terms-missing');

      // The terms link leads to the versioned terms page the service serves.
      const termsHref = (await page.locator('#terms-link').getAttribute('href'))!;
      expect(termsHref).toBe('/terms/2026-11-01');
      const termsPage = await context.newPage();
      const terms = await termsPage.goto(new URL(termsHref, page.url()).toString());
      expect(terms!.status()).toBe(200);
      expect(terms!.headers()['content-security-policy']).toBe(PAGE_CSP);
      expect(await termsPage.locator('h1').textContent()).toBe('Merchant terms');
      await screenshots(termsPage, 'terms-2026-11-01');
      await termsPage.close();

      await page.locator('#accept-terms').focus();
      await page.keyboard.press('Space');
      expect(await page.locator('#accept-terms').isChecked()).toBe(true);
      await page.locator('#finish-button').click();
      await page.locator('#done').waitFor({ state: 'visible' });
      expect(await page.locator('#done-name').textContent()).toBe('Corner Shop & Café');
      expect(await page.locator('#done-currency').textContent()).toBe('EUR');
      expect(await page.locator('#steps').isVisible()).toBe(false);
      await screenshots(page, 'onboarding-04-done');

      const m = await merchantView(shell.merchant_id);
      expect(m).toMatchObject({
        onboarding_status: 'complete',
        wallet_address: wallet.address.toLowerCase(),
        display_name: 'Corner Shop & Café',
        business_name: 'Corner Shop GmbH',
        country: 'DE',
        display_currency: 'eur',
        onboarding_url: null,
      });
      const request = await mustCreateRequest(svc, partner.testKey, { account_id: shell.merchant_id, fiat_amount_int: 1999 });
      expect(request.fiat_currency).toBe('eur');
      expect(request.status).toBe('requested');

      // The link is spent: the page says so in words, with a 404.
      const again = await page.goto(shell.onboarding_url);
      expect(again!.status()).toBe(404);
      expect(await page.locator('h1').textContent()).toBe('This link was already used or is unknown');
      await screenshots(page, 'onboarding-05-link-used');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      wallet.close();
    }
  });

  it('says in words that a wallet already owned by another merchant cannot be used', async () => {
    const taken = Wallet.createRandom();
    await createOnboardedMerchant(svc, partner.testKey, {}, taken as unknown as Wallet);
    const shell = await createShellMerchant(svc, partner.testKey, { display_name: 'Second Shop' });
    const wallet = new TestWallet(taken.privateKey, testEnv().rpcUrl);
    const { context, page, problems } = await openContext(browser, wallet);
    try {
      await page.goto(shell.onboarding_url);
      await page.locator('#connect-button').click();
      await waitForText(page, '#onboarding-error', 'This wallet is already used by another merchant');
      expect(await page.locator('#wallet-connected').isVisible()).toBe(false);
      expect(await page.locator('#display-name').isDisabled()).toBe(true);
      await screenshots(page, 'onboarding-06-wallet-conflict');
      const m = await merchantView(shell.merchant_id);
      expect(m.onboarding_status).toBe('incomplete');
      expect(m.wallet_address).toBeNull();
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('explains a wrong network and a declined signature, and connects once the wallet cooperates', async () => {
    // On Ethereum, declining to switch: the wrong network, in words.
    const wallet = newWallet({ chainId: 1n, knownChains: [1n, 31337n] });
    wallet.declines.add('wallet_switchEthereumChain');
    const shell = await createShellMerchant(svc, partner.testKey, { display_name: 'Third Shop' });
    const { context, page, problems } = await openContext(browser, wallet);
    try {
      await page.goto(shell.onboarding_url);
      await page.locator('#connect-button').click();
      await waitForText(page, '#onboarding-error', 'Your wallet is on the wrong network. Switch it to Local test chain (chain 31337)');
      await screenshots(page, 'onboarding-07-wrong-network');

      wallet.declines.delete('wallet_switchEthereumChain');
      wallet.declines.add('personal_sign');
      await page.locator('#connect-button').click();
      await waitForText(page, '#onboarding-error', 'You declined to sign the message');
      expect(wallet.chainId).toBe(31337n);
      await screenshots(page, 'onboarding-08-signature-declined');
      expect((await merchantView(shell.merchant_id)).wallet_address).toBeNull();

      wallet.declines.delete('personal_sign');
      await page.locator('#connect-button').click();
      await page.locator('#wallet-connected').waitFor({ state: 'visible' });
      expect(await errorText(page)).toBe('');
      expect((await merchantView(shell.merchant_id)).wallet_address).toBe(wallet.address.toLowerCase());
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('answers an unknown token with the 404 page, and a browser without a wallet with words', async () => {
    const { context, page, problems } = await openContext(browser);
    try {
      const unknown = await page.goto(`${svc.publicUrl}/onboarding/${'A'.repeat(43)}`);
      expect(unknown!.status()).toBe(404);
      expect(await page.locator('h1').textContent()).toBe('This link was already used or is unknown');

      const shell = await createShellMerchant(svc, partner.testKey, {});
      await page.goto(`${svc.publicUrl}/onboarding/${tokenOf(shell.onboarding_url)}`);
      expect(await page.locator('h1').textContent()).toBe('Set up payments');
      await page.locator('#connect-button').click();
      await waitForText(page, '#onboarding-error', 'No browser wallet was found');
      await screenshots(page, 'onboarding-09-no-wallet');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('says in words that an expired link has expired, mid-flow too, and the partner’s next read gives a working link (issue 10 point 4)', async () => {
    const wallet = newWallet();
    const shell = await createShellMerchant(svc, partner.testKey, { display_name: 'Slow Shop', wallet_address: wallet.address });
    const expire = () => sql(`UPDATE merchants SET onboarding_link_issued_at = now() - interval '169 hours' WHERE id = $1`, [shell.merchant_id]);
    const { context, page, problems } = await openContext(browser, wallet);
    try {
      // The page was opened while the link worked; it expires before the merchant connects the wallet.
      await page.goto(shell.onboarding_url);
      expect(await page.locator('h1').textContent()).toBe('Set up payments for Slow Shop');
      await expire();
      await page.locator('#connect-button').click();
      await waitForText(page, '#onboarding-error', 'This onboarding link has expired. Ask the partner who sent it for a new link');
      expect(await page.locator('#connect-button').isDisabled()).toBe(true);
      await screenshots(page, 'onboarding-10-expired-mid-flow');

      // Opened afresh: a 410 page in words.
      const expired = await page.goto(shell.onboarding_url);
      expect(expired!.status()).toBe(410);
      expect(expired!.headers()['content-security-policy']).toBe(PAGE_CSP);
      expect(await page.locator('h1').textContent()).toBe('This onboarding link has expired');
      expect(await page.locator('#error-page p').first().textContent()).toContain('Ask the partner who sent you this link for a new one');
      await screenshots(page, 'onboarding-11-link-expired');

      // The partner reads the merchant: a new link, which opens the page; the old one stays expired.
      const fresh = await merchantView(shell.merchant_id);
      expect(fresh.onboarding_url).not.toBe(shell.onboarding_url);
      expect((await page.goto(fresh.onboarding_url))!.status()).toBe(200);
      await page.locator('#connect-button').click();
      await page.locator('#wallet-connected').waitFor({ state: 'visible' });
      expect((await merchantView(shell.merchant_id)).wallet_address).toBe(wallet.address.toLowerCase());
      expect((await page.goto(shell.onboarding_url))!.status()).toBe(410);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      wallet.close();
    }
  });
});
