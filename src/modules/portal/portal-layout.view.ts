import { html, type HtmlValue, type SafeHtml } from '../pages/html';
import { CSRF_FIELD } from './portal-http';
import type { PortalSession } from './portal-sessions.service';
import { PORTAL_CSS_URL } from './portal-style';

export type NavKey = 'dashboard' | 'keys' | 'webhook' | 'deliveries' | 'rates' | 'merchants' | 'users' | 'audit' | 'account';

/** The portal's sections; `adminOnly` ones are listed only for the partner's admin users. */
const NAV: Array<[NavKey, string, string, { adminOnly?: boolean }?]> = [
  ['dashboard', 'Overview', '/portal'],
  ['keys', 'API keys', '/portal/keys'],
  ['webhook', 'Webhooks', '/portal/webhook'],
  ['deliveries', 'Deliveries', '/portal/deliveries'],
  ['rates', 'Rates', '/portal/rates'],
  ['merchants', 'Merchants', '/portal/merchants'],
  ['users', 'Users', '/portal/users', { adminOnly: true }],
  ['audit', 'Audit log', '/portal/audit', { adminOnly: true }],
  ['account', 'Your account', '/portal/account'],
];

/** A message on a page: the outcome of the last action, in words. */
export interface Notice {
  kind: 'ok' | 'error' | 'warn';
  text: string;
  items?: string[];
}

export interface PortalShell {
  title: string;
  /** pages.css, the shared base the portal's stylesheet builds on (AssetStore URL). */
  baseStylesheet: string;
  /** id of <main>, so tests and styles can tell the pages apart. */
  pageId: string;
  session?: PortalSession;
  current?: NavKey;
  body: SafeHtml;
}

export function csrfInput(session: PortalSession): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${session.csrfToken}">`;
}

/** A POST button in its own form, with the session's CSRF token. */
export function postButton(session: PortalSession, action: string, label: string, o: { cls?: string; id?: string; ariaLabel?: string } = {}): SafeHtml {
  return html`<form method="post" action="${action}" class="inline">${csrfInput(session)}<button type="submit" class="${o.cls ?? 'button-small'}"${
    o.id ? html` id="${o.id}"` : ''
  }${o.ariaLabel ? html` aria-label="${o.ariaLabel}"` : ''}>${label}</button></form>`;
}

export function noticeBlock(n: Notice | undefined, id = 'notice'): SafeHtml {
  if (!n) return html``;
  const cls = n.kind === 'error' ? 'message error' : n.kind === 'warn' ? 'message warn' : 'message ok';
  return html`<div class="${cls} page-message" id="${id}" role="${n.kind === 'error' ? 'alert' : 'status'}">
<p>${n.text}</p>${n.items?.length ? html`<ul>${n.items.map((i) => html`<li>${i}</li>`)}</ul>` : ''}
</div>`;
}

/** A timestamp as UTC text, machine-readable in <time>. */
export function when(isoText: string | null | undefined): SafeHtml {
  if (!isoText) return html`<span class="muted">—</span>`;
  const shown = `${isoText.slice(0, 10)} ${isoText.slice(11, 19)} UTC`;
  return html`<time datetime="${isoText}" class="nowrap">${shown}</time>`;
}

export function badge(text: HtmlValue, kind: 'ok' | 'bad' | 'info' | 'muted' | 'warn' = 'muted'): SafeHtml {
  return html`<span class="badge${kind === 'warn' ? '' : ` ${kind}`}">${text}</span>`;
}

function header(session: PortalSession, current: NavKey | undefined): SafeHtml {
  return html`<header class="portal-header">
<div class="portal-header-inner">
<p class="brand">Partner portal<small id="partner-name">${session.partnerName}</small></p>
<nav class="portal-nav" aria-label="Portal">
<ul>${NAV.filter(([, , , o]) => !o?.adminOnly || session.role === 'admin').map(
    ([key, label, href]) => html`<li><a href="${href}"${key === current ? html` aria-current="page"` : ''}>${label}</a></li>`,
  )}</ul>
</nav>
<div class="account"><span class="who" title="${session.email}">${session.email}</span>${postButton(session, '/portal/logout', 'Sign out', { id: 'sign-out' })}</div>
</div>
</header>`;
}

/** The portal's HTML document: the shared base stylesheet, the portal's own, no script at all. */
export function portalDocument(s: PortalShell): string {
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex">
<title>${s.title} · Partner portal</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${s.baseStylesheet}">
<link rel="stylesheet" href="${PORTAL_CSS_URL}">
</head>
<body class="${s.session ? 'portal' : 'portal login'}">
${s.session ? header(s.session, s.current) : ''}
<main id="${s.pageId}">
${s.body}
</main>
</body>
</html>
`}`;
}
