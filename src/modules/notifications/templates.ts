import { iso } from '../../common/time';
import { formatFiat, formatTokenUnits } from '../pages/format';
import { html, type SafeHtml } from '../pages/html';
import type { NotificationKind } from './notification';
import { shownName } from '../../common/names';
import { NETWORKS } from '../../pages-client/shared/networks';

/** A transaction's page on its chain's public explorer, or null (no hash yet, or a chain without one). */
export function txUrl(chainId: bigint, txHash: string | null): string | null {
  const explorer = NETWORKS[chainId.toString()]?.explorer;
  return explorer && txHash && /^0x[0-9a-f]{64}$/i.test(txHash) ? `${explorer}/tx/${txHash}` : null;
}

/** Everything a message shows, read when it is built. */
export interface MessageFacts {
  kind: NotificationKind;
  requestId: string;
  testMode: boolean;
  /** display_name, else business_name (DESIGN §8). */
  merchantName: string | null;
  fiatAmount: number;
  fiatCurrency: string;
  amount: bigint;
  /** Null when the token's symbol and decimals are unknown: the amount is then shown in base units. */
  token: { symbol: string; decimals: number } | null;
  txHash: string | null;
  /** The transaction on the chain's public explorer, when the chain has one (never the local test chain). */
  txUrl: string | null;
  verifiedAt: Date | null;
  /** Charge notices: the pay page and when the charge is due and until when it can be paid. */
  payPageUrl: string;
  dueAt: Date | null;
  expiresAt: Date;
}

export interface EmailContent {
  subject: string;
  text: string;
  html: string;
}

/** The amounts exactly as the pay page shows them: fiat with its currency, token amount with its symbol. */
function amounts(f: MessageFacts): { fiat: string; token: string } {
  const fiat = formatFiat(f.fiatAmount, f.fiatCurrency);
  const token = f.token ? `${formatTokenUnits(f.amount, f.token.decimals)} ${f.token.symbol}` : `${f.amount.toString()} base units`;
  return { fiat, token };
}

/** Header values are one line: a name with line breaks cannot add headers or split the subject. */
function oneLine(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

/**
 * The merchant's name on one line everywhere in a message, the plain-text body too: names are free text of the
 * partner's or the merchant's, and one with a line break would add a line of its own, such as a second "Pay here:".
 */
const merchantOf = (f: MessageFacts) => oneLine(shownName(f.merchantName) ?? '') || 'the merchant';

/** Rows of label → value, for both the HTML table and the plain-text lines. */
function details(f: MessageFacts, a: { fiat: string; token: string }): Array<[string, string]> {
  const rows: Array<[string, string]> = [
    ['Merchant', merchantOf(f)],
    ['Amount', a.fiat],
    ['Paid in tokens', a.token],
  ];
  if (f.kind === 'charge_notice') {
    rows[2] = ['Token amount', a.token];
    if (f.dueAt) rows.push(['Due', iso(f.dueAt)!]);
    rows.push(['Pay by', iso(f.expiresAt)!], ['Pay here', f.payPageUrl]);
  } else {
    rows.push(['Transaction', f.txHash ?? '—']);
    if (f.txUrl) rows.push(['On the explorer', f.txUrl]);
    if (f.verifiedAt) rows.push(['Verified at', iso(f.verifiedAt)!]);
  }
  rows.push(['Request', f.requestId]);
  if (f.testMode) rows.push(['Mode', 'test (no real money moved)']);
  return rows;
}

function headline(f: MessageFacts, a: { fiat: string }): { subject: string; lead: string } {
  const test = f.testMode ? '[test] ' : '';
  const m = merchantOf(f);
  switch (f.kind) {
    case 'receipt':
      return { subject: `${test}Receipt: ${a.fiat} paid to ${m}`, lead: `Your payment of ${a.fiat} to ${m} is confirmed on-chain.` };
    case 'merchant_note':
      return { subject: `${test}Payment received: ${a.fiat}`, lead: `${m} received a payment of ${a.fiat}, verified on-chain.` };
    case 'charge_notice':
      return { subject: `${test}Payment due to ${m}: ${a.fiat}`, lead: `A payment of ${a.fiat} to ${m} is due.` };
  }
}

/**
 * One message in HTML and plain text. Every value is escaped by the `html` template; the HTML has inline
 * styles only, no images, fonts or stylesheets to fetch (nothing that tracks the reader or breaks offline).
 */
export function renderEmail(f: MessageFacts): EmailContent {
  const a = amounts(f);
  const { subject, lead } = headline(f, a);
  const rows = details(f, a);
  const text = [lead, '', ...rows.map(([k, v]) => `${k}: ${v}`), ''].join('\n');
  const cell = 'padding:4px 12px 4px 0;vertical-align:top;';
  const action: SafeHtml | string =
    f.kind === 'charge_notice' ? html`<p><a href="${f.payPageUrl}" style="font-weight:bold;">Pay ${a.fiat}</a></p>` : '';
  const body = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${oneLine(subject)}</title></head>
<body style="font-family:system-ui,-apple-system,Segoe UI,sans-serif;color:#111;">
<p>${lead}</p>
${action}
<table role="presentation" style="border-collapse:collapse;">
${rows.map(([k, v]) => html`<tr><th scope="row" style="${cell}text-align:left;">${k}</th><td style="${cell}word-break:break-all;">${v}</td></tr>
`)}</table>
</body></html>
`;
  return { subject: oneLine(subject), text, html: body.value };
}

/** The SMS receipt (DESIGN §8): the merchant, the fiat amount and the request id. */
export function renderSms(f: MessageFacts): string {
  const test = f.testMode ? '[test] ' : '';
  return oneLine(`${test}Receipt: ${formatFiat(f.fiatAmount, f.fiatCurrency)} paid to ${merchantOf(f)}. Request ${f.requestId}`);
}
