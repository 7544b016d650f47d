import { networkLabel } from '../../pages-client/shared/networks';
import { isShown, PHASE_TEXT, payPhase, type PayPart, type PayPhase } from '../../pages-client/shared/pay-phase';
import { countdownText } from '../../pages-client/shared/countdown';
import { formatFiat, formatTokenUnits } from './format';
import { hiddenUnless, html, pageDocument, trustedHtml } from './html';

import type { PayView } from '../requests/application/pay.service';

export type { PayView };

export interface PayPageAssets {
  stylesheet: string;
  script: string;
}

const tokenAddress = (assetId: string) => assetId.slice(assetId.lastIndexOf(':') + 1);

/** The pay page as of `now`; its script takes over from here (open report, polling, wallet, proof). */
export function renderPayPage(v: PayView, qrSvg: string, assets: PayPageAssets, now: Date): string {
  const phase: PayPhase = payPhase(v.status, v.proof_status, { note: v.proof_note, pastDeadline: now.getTime() >= Date.parse(v.expires_at) });
  const part = (p: PayPart) => html`data-part="${p}"${hiddenUnless(isShown(p, phase))}`;
  const merchant = v.merchant_name ?? 'A merchant';
  // Without the token's decimals (an asset the service could not read), base units are the only exact statement.
  const symbol = v.token_decimals === null ? 'base units' : (v.token_symbol ?? 'tokens');
  const tokenAmount = v.token_decimals === null ? v.amount : formatTokenUnits(v.amount, v.token_decimals);
  const exactAmount = v.token_decimals === null ? v.amount : formatTokenUnits(v.amount, v.token_decimals, false);
  const fiat = formatFiat(v.fiat_amount, v.fiat_currency);
  const network = networkLabel(v.chain_id);
  const expiresAt = Date.parse(v.expires_at);

  return pageDocument({
    title: `Pay ${fiat} to ${merchant}`,
    stylesheet: assets.stylesheet,
    script: assets.script,
    body: html`<main id="pay" data-request-id="${v.request_id}" data-phase="${phase}" data-expires-at="${v.expires_at}" data-server-now="${now.getTime()}">
<section class="card" aria-labelledby="merchant-name">
<p class="eyebrow">Payment request${v.test_mode ? html` <span class="badge">Test mode: no real money</span>` : ''}</p>
<h1 id="merchant-name">${merchant}</h1>
${v.memo ? html`<p class="memo">${v.memo}</p>` : ''}
<p class="amount-fiat" id="fiat-amount">${fiat}</p>
<p class="amount-token"><strong id="token-amount">${tokenAmount} ${symbol}</strong> on <span id="network">${network}</span></p>
<p class="countdown" id="countdown" ${part('countdown')}>${countdownText(expiresAt - now.getTime())}</p>
</section>

<div class="status" id="status" role="status" aria-live="polite" aria-atomic="true">
<p class="status-title" id="status-title">${PHASE_TEXT[phase].title}</p>
<p id="status-detail">${PHASE_TEXT[phase].detail}</p>
</div>

<section class="card" id="pay-section" aria-labelledby="pay-heading" ${part('pay')}>
<h2 id="pay-heading">Pay</h2>
<div class="pay-grid">
<div class="pay-actions">
<button class="button primary" id="pay-button" type="button">Pay with wallet</button>
<p class="message" id="pay-message" aria-live="polite"></p>
<dl class="details">
<dt>Amount to send, exactly</dt>
<dd class="copy-row"><span><code id="exact-amount">${exactAmount}</code> ${symbol}</span>
<button class="button-small" type="button" data-copy="${exactAmount}" data-copy-name="Amount" aria-label="Copy the amount">Copy</button></dd>
<dt>To address</dt>
<dd class="copy-row"><code id="recipient">${v.recipient}</code>
<button class="button-small" type="button" id="copy-recipient" data-copy="${v.recipient}" data-copy-name="Address" aria-label="Copy the recipient address">Copy</button></dd>
<dt>Token contract</dt>
<dd><code id="token-contract">${tokenAddress(v.asset_id)}</code></dd>
<dt>Network</dt>
<dd>${network}</dd>
</dl>
<p class="hint"><a href="${v.payment_uri}">Open in a wallet app</a> on this device.</p>
</div>
<figure class="qr">
<div class="qr-code" role="img" aria-label="QR code of this payment for a wallet app">${trustedHtml(qrSvg)}</div>
<figcaption>Or scan this with a wallet app on your phone</figcaption>
</figure>
</div>
</section>

<section class="card" id="paid-section" aria-labelledby="paid-heading" ${part('paid')}>
<h2 id="paid-heading">Payment</h2>
<dl class="details">
<dt>Transaction</dt>
<dd><code id="paid-tx-hash">${v.tx_hash ?? ''}</code></dd>
</dl>
</section>

<section class="card" id="proof-section" aria-labelledby="proof-heading" ${part('proof')}>
<h2 id="proof-heading">Already sent the payment?</h2>
<form id="proof-form" novalidate>
<label for="tx-hash">Transaction hash</label>
<input type="text" id="tx-hash" name="tx_hash" autocomplete="off" autocapitalize="off" spellcheck="false" inputmode="text" placeholder="0x…" aria-describedby="tx-hash-hint tx-hash-error">
<p class="hint" id="tx-hash-hint">If you paid from another wallet or device, paste the transaction hash from its activity list: 0x followed by 64 letters and digits.</p>
<p class="field-error" id="tx-hash-error" aria-live="polite"></p>
<button class="button secondary" type="submit">Submit transaction hash</button>
<p class="message" id="proof-message" aria-live="polite"></p>
</form>
</section>
<p class="offscreen" id="copy-status" aria-live="polite"></p>
</main>
<footer class="site-footer"><p>Request <code>${v.request_id}</code></p></footer>`,
  });
}
