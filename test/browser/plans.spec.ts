import { Wallet } from 'ethers';
import type { Browser, Page } from 'playwright-core';
import { PAGE_CSP } from '../../src/modules/pages/page-security';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import type { TestService } from '../support/app';
import { launchBrowser, openContext, screenshots, TestWallet, unlabelledControls, waitForText } from '../support/browser';
import { overflowsSideways, signInThroughPage, startAtOwnOrigin, textOf as text } from '../support/dashboard-browser';
import { closeSql, sql } from '../support/db';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/**
 * Issue 12 in Debian's Chromium at 390 px: the dashboard's plans pages (list, new plan, detail with its
 * charges, pause/resume/cancel, the test clock's advance) and the payer's plan page.
 */
let svc: TestService;
let partner: TestPartner;
let browser: Browser;
let merchantKey: string;
let origin: string;

beforeAll(async () => {
  ({ svc, origin } = await startAtOwnOrigin({ worker: true }));
  partner = await createPartner(svc);
  const wallet = Wallet.createRandom();
  merchantKey = wallet.privateKey;
  await createOnboardedMerchant(svc, partner.testKey, { display_name: 'Gym & Co' }, wallet as unknown as Wallet);
  browser = await launchBrowser();
}, 60000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await closeSql();
});

const settled = async (page: Page) => {
  await page.locator('#dash-content').waitFor({ state: 'visible' });
  await waitFor(async () => (await text(page, '#dash-progress')) === '' || (await text(page, '#dash-error')) !== '');
  expect(await text(page, '#dash-error')).toBe('');
};

it('creates a plan in the form, shows it in the list and its detail with its charge, advances, pauses, resumes and cancels it; the payer page follows', async () => {
  const wallet = new TestWallet(merchantKey, testEnv().rpcUrl);
  const { context, page, problems } = await openContext(browser, wallet);
  try {
    await signInThroughPage(page, svc, wallet, '/dashboard/plans');
    await settled(page);
    expect(await page.locator('#plan-empty').isVisible()).toBe(true);

    const res = await page.goto(`${origin}/dashboard/plans/new`);
    expect(res!.headers()['content-security-policy']).toBe(PAGE_CSP);
    await settled(page);
    expect(await unlabelledControls(page)).toEqual([]);
    expect(await overflowsSideways(page)).toBe(false);
    await screenshots(page, 'plans-new');
    // A bad amount is caught in words before anything is sent.
    await page.fill('#plan-title-input', 'Monthly <box>');
    await page.fill('#plan-amount', 'abc');
    await page.click('#plan-submit');
    await waitForText(page, '#plan-amount-error', 'positive amount');
    await page.fill('#plan-amount', '25.00');
    await page.fill('#plan-payer-name', 'Ada');
    await page.fill('#plan-metadata', 'customer=c-7');
    await page.click('#plan-submit');
    await page.waitForURL(/\/dashboard\/plans\/[0-9a-f-]{36}$/);
    await settled(page);
    const planId = page.url().split('/').pop()!;
    expect(await text(page, '#plan-name')).toBe('Monthly <box>');
    expect(await text(page, '#plan-state')).toBe('Active');
    expect(await page.locator('#charge-list li').count()).toBe(1);
    expect(await page.locator('#plan-advance').isVisible()).toBe(true);
    expect(await overflowsSideways(page)).toBe(false);
    await screenshots(page, 'plans-detail');
    const [plan] = await sql(`SELECT metadata, fiat_amount FROM plans WHERE id = $1`, [planId]);
    expect(plan).toEqual({ metadata: { customer: 'c-7' }, fiat_amount: 2500 });

    await page.click('#plan-advance');
    await waitFor(async () => (await page.locator('#charge-list li').count()) === 2);
    await page.click('#plan-pause');
    await waitForText(page, '#plan-state', 'Paused');
    expect(await page.locator('#plan-resume').isVisible()).toBe(true);
    expect(await page.locator('#plan-advance').isVisible()).toBe(false);
    await page.click('#plan-resume');
    await waitForText(page, '#plan-state', 'Active');

    // The payer's page: no sign-in, no script, the Pay button leads to the open charge's pay page.
    const planUrl = await page.locator('#plan-url').getAttribute('href');
    const payer = await context.newPage();
    const payerRes = await payer.goto(planUrl!);
    expect(payerRes!.status()).toBe(200);
    expect(payerRes!.headers()['content-security-policy']).toBe(PAGE_CSP);
    expect(await text(payer, '#plan-title')).toBe('Monthly <box>');
    expect(await text(payer, '#plan-schedule')).toContain('every month');
    expect(await text(payer, '#plan-state')).toContain('Next charge');
    expect(await payer.locator('#history li').count()).toBe(2);
    expect(await overflowsSideways(payer)).toBe(false);
    await screenshots(payer, 'plans-payer');
    const [open] = await sql(`SELECT id FROM payment_requests WHERE plan_id = $1 AND period_index = 1`, [planId]);
    expect(await payer.locator('#pay-link').getAttribute('href')).toBe(`${svc.config.payUrl}/${open.id}`);
    await payer.click('#pay-link');
    await payer.waitForURL(`${svc.config.payUrl}/${open.id}`);
    await payer.locator('#merchant-name').waitFor();
    expect(await text(payer, '#merchant-name')).toBe('Gym & Co');

    page.on('dialog', (d) => void d.accept());
    await page.click('#plan-cancel');
    await waitForText(page, '#plan-state', 'Cancelled');
    await payer.goto(planUrl!);
    expect(await text(payer, '#plan-state')).toContain('canceled');
    // The open charge stays payable after a cancel.
    expect(await payer.locator('#pay-link').isVisible()).toBe(true);

    await page.goto(`${origin}/dashboard/plans`);
    await settled(page);
    expect(await page.locator(`#plan-list li[data-plan-id="${planId}"]`).textContent()).toContain('Cancelled');
    expect(await overflowsSideways(page)).toBe(false);
    await screenshots(page, 'plans-list');
    expect(problems).toEqual([]);
  } finally {
    await context.close();
    wallet.close();
  }
});

it('an unknown plan token is a 404 page', async () => {
  const { context, page } = await openContext(browser);
  try {
    const res = await page.goto(`${origin}/plan/${'B'.repeat(43)}`);
    expect(res!.status()).toBe(404);
  } finally {
    await context.close();
  }
});

it('a plan submitted again after its answer was lost is the same plan: the form keeps its Idempotency-Key', async () => {
  const wallet = new TestWallet(merchantKey, testEnv().rpcUrl);
  const { context, page, problems } = await openContext(browser, wallet);
  try {
    await signInThroughPage(page, svc, wallet, '/dashboard/plans/new');
    await settled(page);
    const title = `Lost answer ${Date.now()}`;
    // The first create reaches the server and is made; its answer never reaches the page.
    const keys: string[] = [];
    let lost = false;
    await page.route('**/dashboard/api/plans', async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      keys.push(route.request().headers()['idempotency-key']);
      if (lost) return route.continue();
      lost = true;
      await route.fetch();
      await route.abort('connectionreset');
    });
    await page.fill('#plan-title-input', title);
    await page.fill('#plan-amount', '12.00');
    await page.click('#plan-submit');
    await waitFor(async () => (await text(page, '#dash-error')) !== '');
    await page.click('#plan-submit');
    await page.waitForURL(/\/dashboard\/plans\/[0-9a-f-]{36}$/);
    const plans = await sql(`SELECT id FROM plans WHERE title = $1`, [title]);
    expect(plans).toEqual([{ id: page.url().split('/').pop() }]);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(problems.filter((p) => !/connection|ERR_CONNECTION_RESET|Failed to fetch/i.test(p))).toEqual([]);
  } finally {
    await context.close();
    wallet.close();
  }
});

it('a plan paused because charges went unpaid offers "Keep paused", which makes the pause the merchant\'s', async () => {
  const wallet = new TestWallet(merchantKey, testEnv().rpcUrl);
  const { context, page, problems } = await openContext(browser, wallet);
  try {
    await signInThroughPage(page, svc, wallet, '/dashboard/plans/new');
    await settled(page);
    await page.fill('#plan-title-input', `Unpaid ${Date.now()}`);
    await page.fill('#plan-amount', '9.00');
    await page.click('#plan-submit');
    await page.waitForURL(/\/dashboard\/plans\/[0-9a-f-]{36}$/);
    await settled(page);
    const planId = page.url().split('/').pop()!;
    // Two charges missed in a row (the test clock) pause it for unpaid.
    await page.click('#plan-advance');
    await waitFor(async () => (await page.locator('#charge-list li').count()) === 2);
    await page.click('#plan-advance');
    await waitForText(page, '#plan-state', 'Paused: charges went unpaid');
    expect(await text(page, '#plan-pause')).toBe('Keep paused');
    await page.click('#plan-pause');
    await waitFor(async () => (await text(page, '#plan-state')) === 'Paused');
    expect(await page.locator('#plan-pause').isVisible()).toBe(false);
    expect(await page.locator('#plan-resume').isVisible()).toBe(true);
    expect(await sql(`SELECT status, pause_reason FROM plans WHERE id = $1`, [planId])).toEqual([{ status: 'paused', pause_reason: 'merchant' }]);
    expect(problems).toEqual([]);
  } finally {
    await context.close();
    wallet.close();
  }
});
