import { byId, say } from './lib/dom';
import { fail, handlePage, homePage, newRequestPage, requestPage, requestsPage, settingsPage, signInPage, type PageContext } from './dashboard/pages';
import { newPlanPage, planPage, plansPage } from './dashboard/plans';
import { dash, forgetCsrf, rememberCsrf, SIGN_IN_PATH } from './dashboard/session';
import type { Me } from './dashboard/types';
import { shownName } from '../common/names';

/**
 * The merchant dashboard (DESIGN §5): one script for every page under /dashboard. The page's `data-page`
 * says which; every page but sign-in first reads GET /dashboard/api/me (a 401 leads to sign-in).
 */
const root = byId('dashboard');
const progress = byId('dash-progress');
const problem = byId('dash-error');

const PAGES: Record<string, ((ctx: PageContext) => void | Promise<void>) | undefined> = {
  home: homePage,
  requests: requestsPage,
  request: requestPage,
  'new-request': newRequestPage,
  settings: settingsPage,
  handle: handlePage,
  plans: plansPage,
  plan: planPage,
  'new-plan': newPlanPage,
};

async function signOut(button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  try {
    await dash('DELETE', '/session');
  } catch {
    // Signed out already, or the token is gone: the cookie ends on its own; this tab forgets it either way.
  }
  forgetCsrf();
  location.assign(SIGN_IN_PATH);
}

async function main(): Promise<void> {
  const page = root.dataset.page!;
  if (page === 'sign-in') {
    signInPage(root, progress, problem);
    return;
  }
  const signOutButton = byId<HTMLButtonElement>('sign-out-button');
  signOutButton.addEventListener('click', () => void signOut(signOutButton));
  say(progress, 'Loading…');
  try {
    const [me, session] = await Promise.all([dash<Me>('GET', '/me'), dash<{ csrf_token: string }>('GET', '/session')]);
    rememberCsrf(session.csrf_token);
    byId('dash-merchant-name').textContent = shownName(me.display_name, me.business_name) ?? '';
    byId('dash-test-mode').hidden = !me.test_mode;
    byId('dash-disabled').hidden = !me.disabled;
    const ctx: PageContext = { root, me, progress, problem };
    byId('dash-content').hidden = false;
    await PAGES[page]?.(ctx);
    say(progress, '');
  } catch (e) {
    byId('dash-content').hidden = false;
    fail({ progress, problem }, e);
  }
}

void main();
