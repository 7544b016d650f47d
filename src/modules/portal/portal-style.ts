import { createHash } from 'node:crypto';

/**
 * The portal's layer over the pages' stylesheet (pages.css: colours, type, cards, buttons, fields), for
 * what the pay and onboarding pages do not have: a header with navigation, tables, wider layout. Kept in a
 * TypeScript module so the compiled service carries it without a copy step; served from memory under
 * /portal/assets with its content hash in the URL.
 */
export const PORTAL_CSS = `
.portal main { max-width: 72rem; }
.portal code { word-break: normal; overflow-wrap: anywhere; }
.portal-header { background: var(--card); border-bottom: 1px solid var(--line); }
.portal-header-inner { max-width: 72rem; margin: 0 auto; padding: 0.75rem 1rem 0.5rem; display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center; }
.brand { font-weight: 700; margin: 0; display: flex; flex-direction: column; line-height: 1.2; min-width: 0; }
.brand small { color: var(--muted); font-weight: 400; font-size: 0.8125rem; overflow-wrap: anywhere; }
.portal-nav { order: 3; flex-basis: 100%; }
.portal-nav ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 0.25rem; }
.portal-nav a { display: block; padding: 0.45rem 0.6rem; border-radius: 8px; text-decoration: none; white-space: nowrap; color: var(--text); font-weight: 600; font-size: 0.9375rem; }
.portal-nav a:hover { background: var(--info-bg); }
.portal-nav a[aria-current='page'] { background: var(--info-bg); color: var(--info-text); }
.account { margin-left: auto; display: flex; align-items: center; gap: 0.75rem; font-size: 0.875rem; color: var(--muted); min-width: 0; }
.account form { margin: 0; }
.account .who { display: none; max-width: 16rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.page-title { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: baseline; justify-content: space-between; margin: 0.5rem 0 1rem; }
.page-title h1 { margin: 0; }
.lead { color: var(--muted); margin: 0 0 1rem; }
.card h2 { margin-top: 0; }
.grid { display: grid; gap: 1rem; margin-bottom: 1rem; }
.grid > .card { margin-bottom: 0; }
.stat { font-size: 1.5rem; font-weight: 700; margin: 0; }
.stat-label { color: var(--muted); font-size: 0.875rem; margin: 0; overflow-wrap: anywhere; }

input[type='email'], input[type='password'], input[type='url'], input.readonly-value {
  width: 100%; min-height: 2.75rem; padding: 0.5rem 0.75rem; border: 1px solid var(--muted); border-radius: 8px;
  background: var(--card); color: var(--text); font: inherit;
}
input.readonly-value { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace; font-size: 0.875rem; background: var(--bg); }
.secret-box { background: var(--warn-bg); color: var(--warn-text); border-radius: var(--radius); padding: 1rem 1.25rem; margin: 0 0 1rem; }
.secret-box label { color: var(--text); }
.secret-box p { margin: 0 0 0.5rem; }
.choices { display: flex; flex-wrap: wrap; gap: 0 1.5rem; }
.choices .check { margin-top: 0.5rem; }
legend { font-weight: 600; padding: 0; }
fieldset + fieldset { margin-top: 1rem; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: center; margin-top: 1rem; }
.actions form { margin: 0; }
.actions .button, .actions .button + .button { margin: 0; }
.actions .hint { margin: 0; flex: 1 1 16rem; }
form.inline { display: inline; margin: 0; }
.message > :last-child { margin-bottom: 0; }
.message ul { margin: 0.5rem 0 0; padding-left: 1.25rem; }
.message.ok { background: var(--ok-bg); color: var(--ok-text); }
.message.warn { background: var(--warn-bg); color: var(--warn-text); }
.badge.ok { background: var(--ok-bg); color: var(--ok-text); }
.badge.bad { background: var(--bad-bg); color: var(--bad-text); }
.badge.info { background: var(--info-bg); color: var(--info-text); }
.badge.muted { background: var(--bg); color: var(--muted); border: 1px solid var(--line); }
.muted { color: var(--muted); }
.pager { display: flex; gap: 1rem; justify-content: space-between; margin-top: 1rem; }
.tabs { display: flex; gap: 0.5rem; margin: 0 0 1rem; }
.tabs a { padding: 0.4rem 0.9rem; border-radius: 999px; border: 1px solid var(--line); text-decoration: none; font-weight: 600; }
.tabs a[aria-current='page'] { background: var(--accent); border-color: var(--accent); color: var(--accent-text); }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: 0.35rem 1rem; margin: 0; }
.kv dt { color: var(--muted); }
.kv dd { margin: 0; overflow-wrap: anywhere; }

/* Tables: each cell's content sits in one .cell; on narrow screens rows become labelled cards. */
.table-wrap { margin-bottom: 0.75rem; }
.table-wrap:last-child { margin-bottom: 0; }
table.data { width: 100%; border-collapse: collapse; font-size: 0.9375rem; }
table.data th { text-align: left; color: var(--muted); font-weight: 600; font-size: 0.8125rem; text-transform: uppercase; letter-spacing: 0.02em; }
table.data th, table.data td { padding: 0.6rem 0.5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
table.data td.num { font-variant-numeric: tabular-nums; }
table.data .key-prefix { white-space: nowrap; }
table.data .button-small { white-space: nowrap; margin-top: 0.25rem; }
table.data tr.revoked td { color: var(--muted); }
table.grouped tbody tr:has(+ tr.link-row) td { border-bottom: 0; padding-bottom: 0.25rem; }
table.grouped tr.link-row td { padding-top: 0; }
table.grouped tr.link-row label { margin-top: 0; font-size: 0.875rem; }
@media (max-width: 47.99rem) {
  table.data thead { position: absolute; left: -10000px; width: 1px; height: 1px; overflow: hidden; }
  table.data, table.data tbody, table.data tr, table.data td { display: block; width: 100%; }
  table.data tr, table.grouped tbody { border: 1px solid var(--line); border-radius: 10px; padding: 0.5rem 0.75rem; margin-bottom: 0.75rem; }
  table.grouped tbody tr { border: 0; padding: 0; margin: 0; }
  table.data td, table.grouped tbody tr:has(+ tr.link-row) td { border: 0; padding: 0.3rem 0; display: grid; grid-template-columns: 6.5rem minmax(0, 1fr); gap: 0.5rem; }
  table.data td::before { content: attr(data-label); color: var(--muted); font-size: 0.8125rem; font-weight: 600; }
  table.data td.wide { display: block; }
  table.data td.wide::before { content: none; }
  table.grouped tr.link-row td { padding-top: 0.5rem; }
  .kv { grid-template-columns: 1fr; gap: 0; }
  .kv dd { margin-bottom: 0.5rem; }
}
@media (min-width: 48rem) {
  .portal-header-inner { flex-wrap: nowrap; padding-bottom: 0.75rem; }
  .portal-nav { order: 0; flex-basis: auto; }
  .portal-nav ul { flex-wrap: nowrap; }
  .account .who { display: inline; }
  .nowrap { white-space: nowrap; }
  .grid.cols-3 { grid-template-columns: repeat(3, 1fr); }
  .portal main { padding-top: 1.5rem; }
  .portal .card { padding: 1.5rem; }
  .login main { max-width: 28rem; padding-top: 4rem; }
}
@media (min-width: 48rem) and (max-width: 68rem) {
  .account .who { display: none; }
}
`;

export const PORTAL_CSS_VERSION = createHash('sha256').update(PORTAL_CSS).digest('hex').slice(0, 16);
export const PORTAL_CSS_URL = `/portal/assets/portal.css?v=${PORTAL_CSS_VERSION}`;
