import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import type { Browser, Page } from 'playwright-core';
import { PAGE_CSP } from '../../src/modules/pages/page-security';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import type { TestService } from '../support/app';
import { launchBrowser, openContext, screenshots, TestWallet, unlabelledControls, waitForText } from '../support/browser';
import { foreignRequests, overflowsSideways, signInThroughPage, startAtOwnOrigin, textOf as text } from '../support/dashboard-browser';
import { closeSql } from '../support/db';
import { call } from '../support/http';
import { signInDashboard } from '../factories/dashboard';
import { testEnv } from '../support/test-env';

/**
 * Issue 11, the handle: a merchant claims it on the dashboard's handle page, then anyone pays an amount of
 * their choice on /m/<handle> and lands on the pay page of a new request; a disabled merchant's page says it
 * is not accepting payments; an unknown handle is a 404 page.
 */
let svc: TestService;
let partner: TestPartner;
let browser: Browser;
let origin: string;

beforeAll(async () => {
  ({ svc, origin } = await startAtOwnOrigin());
  partner = await createPartner(svc, { default_currency: 'usd' });
  browser = await launchBrowser();
}, 60000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await closeSql();
});


async function merchantWithHandle(name: string) {
  const wallet = Wallet.createRandom();
  const { id } = await createOnboardedMerchant(svc, partner.testKey, { display_name: name }, wallet as unknown as Wallet);
  return { id, wallet: new TestWallet(wallet.privateKey, testEnv().rpcUrl) };
}

/** A merchant that claimed a handle through the dashboard's API (the page's own claim is tested above). */
async function merchantAtHandle(name: string, prefix: string, extra: Record<string, unknown> = {}) {
  const m = await createOnboardedMerchant(svc, partner.testKey, { display_name: name, ...extra });
  const dash = await signInDashboard(svc, m.wallet);
  const handle = `${prefix}-${randomBytes(3).toString('hex')}`;
  expect((await dash.call('PUT', '/handle', { body: { handle } })).status).toBe(200);
  return { m, dash, handle };
}

describe('the handle', () => {
  it('is claimed on the dashboard; its public page creates a request for any amount and lands on the pay page', async () => {
    const m = await merchantWithHandle('Bakery Süd');
    const handle = `bakery-${randomBytes(3).toString('hex')}`;
    const { context, page, problems } = await openContext(browser, m.wallet);
    const foreign = foreignRequests(context, origin);
    try {
      await signInThroughPage(page, svc, m.wallet, '/dashboard/handle');
      expect(await page.locator('#handle-none').isVisible()).toBe(true);
      // A reserved word is refused in words; nothing is claimed.
      await page.locator('#handle-input').fill('admin');
      await page.locator('#handle-save').click();
      await waitForText(page, '#handle-input-error', 'cannot be used');
      await page.locator('#handle-input').fill(handle.toUpperCase());
      await page.locator('#handle-save').click();
      await waitForText(page, '#dash-progress', 'Handle saved');
      expect(await text(page, '#handle-url')).toBe(`${origin}/m/${handle}`);
      await screenshots(page, 'dashboard-handle-claimed');
      expect(problems).toEqual([]);

      // The public page, as a payer with no wallet and no session.
      const payer = await openContext(browser);
      const payerForeign = foreignRequests(payer.context, origin);
      try {
        const res = await payer.page.goto(`${origin}/m/${handle}`);
        expect(res!.status()).toBe(200);
        expect(res!.headers()['content-security-policy']).toBe(PAGE_CSP);
        await waitForText(payer.page, '#handle-name', 'Pay Bakery Süd');
        expect(await payer.page.locator('#handle-test-mode').isVisible()).toBe(true);
        expect(await text(payer.page, 'label[for="handle-amount"]')).toBe('Amount in USD');
        expect(await unlabelledControls(payer.page)).toEqual([]);
        expect(await overflowsSideways(payer.page)).toBe(false);
        await screenshots(payer.page, 'handle-page');
        await payer.page.locator('#handle-amount').fill('0');
        await payer.page.locator('#handle-pay').click();
        await waitForText(payer.page, '#handle-amount-error', 'Enter a positive amount');
        // A decimal comma is a decimal comma (it was read as grouping: "7,50" made a $750 request), and the
        // page says what it read before anything is made.
        await payer.page.locator('#handle-amount').fill('7,50');
        await waitForText(payer.page, '#handle-amount-hint', 'You pay $7.50');
        await payer.page.locator('#handle-memo').fill('Two croissants');
        await payer.page.locator('#handle-pay').click();
        await payer.page.waitForURL(/\/pay\/[0-9a-f-]{36}$/);
        const id = payer.page.url().split('/').pop()!;
        await payer.page.locator('#pay').waitFor();
        await screenshots(payer.page, 'handle-page-landed-on-pay-page');
        const seen = await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey });
        expect(seen.body).toMatchObject({ account_id: m.id, fiat_amount: 750, fiat_currency: 'usd', metadata: null, status: 'opened' });
        expect(payer.problems).toEqual([]);
        expect(payerForeign).toEqual([]);
      } finally {
        await payer.context.close();
      }

      // The merchant's list shows it as a handle request.
      await page.goto(`${origin}/dashboard/requests?source=handle`);
      await page.locator('#request-list li').first().waitFor();
      expect(await text(page, '#request-list li')).toContain('Handle page');
      expect(problems).toEqual([]);
      expect(foreign).toEqual([]);
    } finally {
      await context.close();
      m.wallet.close();
    }
  });

  it('refuses an amount priced in the currency the page showed once the merchant has changed it, and says to reload', async () => {
    const { m, dash, handle } = await merchantAtHandle('Kiosk', 'kiosk');
    const { context, page, problems } = await openContext(browser);
    try {
      await page.goto(`${origin}/m/${handle}`);
      await waitForText(page, 'label[for="handle-amount"]', 'Amount in USD');
      // The merchant switches to EUR while the payer types: $7.50 must not become €7.50.
      expect((await dash.call('PATCH', '/me', { body: { display_currency: 'eur' } })).status).toBe(200);
      await page.locator('#handle-amount').fill('7.50');
      await page.locator('#handle-pay').click();
      await waitForText(page, '#handle-error', 'now takes payments in another currency. Reload the page');
      expect(page.url()).toBe(`${origin}/m/${handle}`);
      expect(await call(svc.publicUrl, 'GET', `/api/v1/requests?account_id=${m.id}`, { key: partner.testKey }).then((r) => r.body.requests)).toEqual([]);
      await page.reload();
      await waitForText(page, 'label[for="handle-amount"]', 'Amount in EUR');
      await page.locator('#handle-amount').fill('7.50');
      await page.locator('#handle-pay').click();
      await page.waitForURL(/\/pay\/[0-9a-f-]{36}$/);
      const seen = await call(svc.publicUrl, 'GET', `/api/v1/requests/${page.url().split('/').pop()}`, { key: partner.testKey });
      expect(seen.body).toMatchObject({ account_id: m.id, fiat_amount: 750, fiat_currency: 'eur' });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('in dinars, "1.255" is refused with both readings and how to type each; "1.2550" pays 1.255 dinars', async () => {
    const { m, handle } = await merchantAtHandle('Souq Stall', 'souq', { display_currency: 'kwd' });
    const { context, page, problems } = await openContext(browser);
    try {
      await page.goto(`${origin}/m/${handle}`);
      await waitForText(page, 'label[for="handle-amount"]', 'Amount in KWD');
      // 1.255 or 1255 dinars: the page says so as it is typed, and refuses it rather than guess (it said only
      // "Enter a positive amount", and 1.255 dinars could not be typed at all).
      await page.locator('#handle-amount').fill('1.255');
      await waitForText(page, '#handle-amount-hint', '"1.255" reads two ways: type 1.2550 for KWD');
      await page.locator('#handle-pay').click();
      await waitForText(page, '#handle-amount-error', 'or 1255 for KWD');
      expect(await call(svc.publicUrl, 'GET', `/api/v1/requests?account_id=${m.id}`, { key: partner.testKey }).then((r) => r.body.requests)).toEqual([]);
      await page.locator('#handle-amount').fill('1.2550');
      await waitForText(page, '#handle-amount-hint', 'You pay KWD');
      expect(await text(page, '#handle-amount-hint')).toMatch(/^You pay KWD\s1\.255$/);
      await page.locator('#handle-pay').click();
      await page.waitForURL(/\/pay\/[0-9a-f-]{36}$/);
      const seen = await call(svc.publicUrl, 'GET', `/api/v1/requests/${page.url().split('/').pop()}`, { key: partner.testKey });
      expect(seen.body).toMatchObject({ account_id: m.id, fiat_amount: 1255, fiat_currency: 'kwd' });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a retry after a lost answer lands on the request already made; coming back from the pay page makes a new one', async () => {
    const { m, handle } = await merchantAtHandle('Tip Jar', 'tips');
    const made = () => call(svc.publicUrl, 'GET', `/api/v1/requests?account_id=${m.id}`, { key: partner.testKey }).then((r) => r.body.requests as { request_id: string }[]);
    const { context, page } = await openContext(browser);
    try {
      await page.goto(`${origin}/m/${handle}`);
      await waitForText(page, 'label[for="handle-amount"]', 'Amount in USD');
      // The server makes the request, and the answer is lost on the way back.
      const create = `${origin}/m/api/${handle}/requests`;
      await page.route(create, async (route) => {
        await route.fetch();
        await route.abort('connectionreset');
      });
      await page.locator('#handle-amount').fill('3.00');
      await page.locator('#handle-pay').click();
      await waitForText(page, '#handle-error', 'connection');
      expect(await made()).toHaveLength(1);
      await page.unroute(create);
      await page.locator('#handle-pay').click();
      await page.waitForURL(/\/pay\/[0-9a-f-]{36}$/);
      const first = page.url().split('/').pop();
      expect((await made()).map((r) => r.request_id)).toEqual([first]);
      // Back from the pay page, the payer pays again: a second payment, a second request.
      await page.goBack();
      await waitForText(page, 'label[for="handle-amount"]', 'Amount in USD');
      await page.locator('#handle-amount').fill('3.00');
      await page.locator('#handle-pay').click();
      await page.waitForURL((u) => /\/pay\/[0-9a-f-]{36}$/.test(u.pathname) && !u.pathname.endsWith(first!));
      expect((await made()).map((r) => r.request_id).sort()).toEqual([first, page.url().split('/').pop()].sort());
    } finally {
      await context.close();
    }
  });

  it('says "not accepting payments" for a disabled merchant, and is a 404 page for an unknown handle', async () => {
    const m = await merchantWithHandle('Closed Shop');
    const handle = `closed-${randomBytes(3).toString('hex')}`;
    const login = await openContext(browser, m.wallet);
    try {
      await signInThroughPage(login.page, svc, m.wallet, '/dashboard/handle');
      await login.page.locator('#handle-input').fill(handle);
      await login.page.locator('#handle-save').click();
      await waitForText(login.page, '#dash-progress', 'Handle saved');
    } finally {
      await login.context.close();
      m.wallet.close();
    }
    expect((await admin(svc, 'POST', `/merchants/${m.id}/disable`)).status).toBe(200);

    const { context, page, problems } = await openContext(browser);
    try {
      await page.goto(`${origin}/m/${handle}`);
      await page.locator('#handle-closed').waitFor({ state: 'visible' });
      expect(await text(page, '#handle-closed')).toBe('This merchant is not accepting payments right now.');
      expect(await page.locator('#handle-form').isVisible()).toBe(false);
      await screenshots(page, 'handle-page-disabled');

      const unknown = await page.goto(`${origin}/m/nobody-${randomBytes(3).toString('hex')}`);
      expect(unknown!.status()).toBe(404);
      expect(unknown!.headers()['content-security-policy']).toBe(PAGE_CSP);
      expect(await text(page, 'h1')).toBe('No merchant at this address');
      await screenshots(page, 'handle-page-unknown');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
