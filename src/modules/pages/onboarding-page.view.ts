import { networkLabel } from '../../pages-client/shared/networks';
import { hiddenUnless, html, pageDocument, textField as field, currencyOption } from './html';
import { shownName } from '../../common/names';

/** GET /onboarding/api/:token (OnboardingService.state), the fields the page shows. */
export interface OnboardingView {
  wallet_address: string | null;
  wallet_verified: boolean;
  terms_version: string;
  chain_id: string | null;
  merchant: {
    display_name: string | null;
    business_name: string | null;
    country: string | null;
    display_currency: string;
    test_mode: boolean;
  };
}

export interface OnboardingPageInput {
  token: string;
  state: OnboardingView;
  /** Lower-case codes the service has rates for. */
  currencies: string[];
  termsUrl: string;
  assets: { stylesheet: string; script: string };
}

/** The merchant's onboarding page: wallet, details, terms; its script drives the wallet and the API. */
export function renderOnboardingPage(p: OnboardingPageInput): string {
  const { state, token } = p;
  const m = state.merchant;
  const verified = state.wallet_verified && state.wallet_address !== null;
  const currencies = p.currencies.includes(m.display_currency) ? p.currencies : [...p.currencies, m.display_currency].sort();
  const name = shownName(m.display_name, m.business_name);

  return pageDocument({
    title: 'Set up payments',
    stylesheet: p.assets.stylesheet,
    script: p.assets.script,
    body: html`<main id="onboarding" data-token="${token}">
<section class="card" aria-labelledby="onboarding-title">
<p class="eyebrow">Merchant setup${m.test_mode ? html` <span class="badge">Test mode</span>` : ''}</p>
<h1 id="onboarding-title">Set up payments${name ? html` for <span id="merchant-name">${name}</span>` : ''}</h1>
<p>Three short steps: connect the wallet that receives your payments, check your details, and accept the terms.</p>
<noscript><p class="message error">This page needs JavaScript to talk to your wallet.</p></noscript>
</section>

<p class="message page-message" id="onboarding-progress" aria-live="polite"></p>
<p class="message page-message error" id="onboarding-error" role="alert"></p>

<div id="steps">
<section class="card" id="step-wallet" aria-labelledby="step-wallet-title" data-done="${verified ? 'true' : 'false'}">
<h2 id="step-wallet-title"><span class="step-number" aria-hidden="true">1</span>Connect your wallet</h2>
<p>Payments go straight to this wallet. Your wallet will ask you to sign a message that proves it is yours; signing is free and sends no transaction.</p>
${state.chain_id ? html`<p class="hint">Payments arrive on ${networkLabel(state.chain_id)}; your wallet will be asked to use that network.</p>` : ''}
${!verified && state.wallet_address ? html`<p class="hint" id="expected-wallet-hint">Use the wallet registered for you: <code id="expected-wallet">${state.wallet_address}</code></p>` : ''}
<p class="connected" id="wallet-connected"${hiddenUnless(verified)}>Connected: <code id="wallet-address">${verified ? state.wallet_address : ''}</code></p>
<button class="button ${verified ? 'secondary' : 'primary'}" id="connect-button" type="button">${verified ? 'Connect a different wallet' : 'Connect wallet'}</button>
</section>

<form id="details-form" novalidate>
<fieldset id="details-fields"${verified ? '' : html` disabled`}>
<section class="card" id="step-details" aria-labelledby="step-details-title">
<h2 id="step-details-title"><span class="step-number" aria-hidden="true">2</span>Check your details</h2>
<p class="hint" id="details-locked"${hiddenUnless(!verified)}>Connect your wallet first.</p>
${field({ id: 'display-name', name: 'display_name', label: 'Name shown to payers', value: m.display_name, extra: html` maxlength="120" autocomplete="organization"` })}
${field({ id: 'business-name', name: 'business_name', label: 'Legal business name', value: m.business_name, extra: html` maxlength="120"` })}
${field({ id: 'country', name: 'country', label: 'Country', value: m.country, hint: 'Two-letter code, for example DE, US or IN.', extra: html` maxlength="2" autocapitalize="characters" autocomplete="country"` })}
<label for="display-currency">Currency of your prices</label>
<select id="display-currency" name="display_currency" aria-describedby="display-currency-error">
${currencies.map((c) => currencyOption(c, m.display_currency))}
</select>
<p class="field-error" id="display-currency-error" aria-live="polite"></p>
</section>

<section class="card" id="step-terms" aria-labelledby="step-terms-title">
<h2 id="step-terms-title"><span class="step-number" aria-hidden="true">3</span>Accept the terms</h2>
<p>Please read the <a id="terms-link" href="${p.termsUrl}" target="_blank" rel="noopener">merchant terms, version ${state.terms_version}</a> (they open in a new tab).</p>
<label class="check" for="accept-terms"><input type="checkbox" id="accept-terms" name="accept_terms" value="yes" aria-describedby="accept-terms-error">
<span>I have read and accept the merchant terms, version ${state.terms_version}.</span></label>
<p class="field-error" id="accept-terms-error" aria-live="polite"></p>
<button class="button primary" id="finish-button" type="submit">Finish setup</button>
</section>
</fieldset>
</form>
</div>

<section class="card" id="done" aria-labelledby="done-title" hidden>
<h2 id="done-title" tabindex="-1">You are all set</h2>
<p>Your merchant account can now receive payments. You can close this page.</p>
<dl class="details">
<dt>Name shown to payers</dt><dd id="done-name"></dd>
<dt>Payments go to</dt><dd><code id="done-wallet"></code></dd>
<dt>Prices shown in</dt><dd id="done-currency"></dd>
</dl>
</section>
</main>`,
  });
}
