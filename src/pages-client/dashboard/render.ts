import { formatFiat, formatTokenUnits } from '../../modules/pages/format';
import { SOURCE_NAMES, stateWords } from './words';
import type { DashboardRequest, TokenAsset } from './types';

/** DOM building with text nodes only: nothing from the API is ever parsed as markup. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string | null | undefined)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  // A field an answer lacks is undefined: shown like null (nothing), never as the word "undefined".
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function when(iso: string | null): string {
  return iso ? dateTime.format(new Date(iso)) : '—';
}

export function money(r: { fiat_amount: number; fiat_currency: string }): string {
  return formatFiat(r.fiat_amount, r.fiat_currency);
}

/**
 * The token amount as a merchant reads it, "12.34 USDC", with bigint and string math only (exact, never
 * rounded), the token found among `assets` (GET /dashboard/api/assets) by the request's asset_id. Without
 * the token's decimals, base units are the only exact statement.
 */
export function tokenAmount(r: Pick<DashboardRequest, 'amount' | 'asset_id'>, assets: readonly TokenAsset[]): string {
  const id = r.asset_id.toLowerCase();
  const token = assets.find((a) => a.asset_id.toLowerCase() === id);
  return token ? `${formatTokenUnits(r.amount, token.decimals)} ${token.symbol}` : `${r.amount} base units`;
}

export function stateBadge(r: DashboardRequest): HTMLElement {
  const s = stateWords(r);
  return el('span', { class: `state state-${s.tone}` }, s.text);
}

/** One request as a line of the lists: amount and state, then date, origin and memo; all of it links to the detail. */
export function requestItem(r: DashboardRequest): HTMLLIElement {
  const meta = [when(r.created_at), SOURCE_NAMES[r.source] ?? r.source, r.memo ?? r.customer_name ?? ''].filter(Boolean).join(' · ');
  return el(
    'li',
    { 'data-request-id': r.request_id },
    el(
      'a',
      { href: `/dashboard/requests/${r.request_id}`, class: 'req-item' },
      el('span', { class: 'req-top' }, el('strong', { class: 'req-amount' }, money(r)), stateBadge(r)),
      el('span', { class: 'req-meta' }, meta),
    ),
  );
}

/** Appends term/description pairs to a <dl>; empty values show a dash. */
export function fillDetails(dl: HTMLElement, rows: [string, string | Node | null | undefined][]): void {
  dl.replaceChildren();
  for (const [term, value] of rows) {
    dl.append(el('dt', {}, term), el('dd', {}, value === null || value === undefined || value === '' ? '—' : value));
  }
}
