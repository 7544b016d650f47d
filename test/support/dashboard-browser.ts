import type { BrowserContext, Page } from 'playwright-core';
import { findFreePort } from '../../scripts/chain/local-node';
import { startService, type TestService } from './app';
import type { TestWallet } from './browser';

/**
 * The dashboard's browser specs: sign in through the UI with an injected wallet, and watch for any request
 * that leaves the service's own origin (the pages load nothing from elsewhere).
 */
export async function signInThroughPage(page: Page, svc: TestService, wallet: TestWallet, path = '/dashboard'): Promise<string> {
  await page.goto(`${svc.config.publicUrl}${path}`);
  await page.waitForURL(/\/dashboard\/sign-in\?next=/);
  const before = wallet.calls.length;
  await page.locator('#sign-in-button').click();
  await page.waitForURL((u) => u.pathname === path);
  await page.locator('#dash-content').waitFor({ state: 'visible' });
  const sign = wallet.calls.slice(before).find((c) => c.method === 'personal_sign')!;
  return Buffer.from((sign.params[0] as string).slice(2), 'hex').toString('utf8');
}

/** Every URL the context asked for outside `origin` (data: and about: aside). */
export function foreignRequests(context: BrowserContext, origin: string): string[] {
  const seen: string[] = [];
  context.on('request', (r) => {
    const url = r.url();
    if (!url.startsWith(origin) && !/^(data|about|blob):/.test(url)) seen.push(url);
  });
  return seen;
}

/** Whether the page scrolls sideways at its current width (it must not, at 390 px). */
export function overflowsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
}

/**
 * A service whose PUBLIC_URL is its own address (Sign-In with Ethereum checks the message's domain and uri
 * against it), so the browser signs in against the origin it loaded the page from.
 */
export async function startAtOwnOrigin(opts: { worker?: boolean; env?: Record<string, string> } = {}): Promise<{ svc: TestService; origin: string }> {
  const port = await findFreePort();
  const origin = `http://localhost:${port}`;
  const svc = await startService({ worker: opts.worker, env: { PORT: String(port), PUBLIC_URL: origin, ...opts.env } });
  return { svc, origin };
}

/** An element's text, trimmed ('' when it has none). */
export const textOf = async (page: Page, selector: string): Promise<string> => ((await page.locator(selector).textContent()) ?? '').trim();
