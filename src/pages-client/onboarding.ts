import { api, ApiError, commonProblem } from './lib/api';
import { byId, say } from './lib/dom';
import { siweMessage } from './lib/siwe';
import { ensureChain, injectedWallet, requestAccount, signText, walletChainId, WalletError } from './lib/wallet';
import { shownName } from '../common/names';

/** GET /onboarding/api/:token (DESIGN §4), the fields this script reads. */
interface OnboardingState {
  wallet_address: string | null;
  wallet_verified: boolean;
  nonce: string;
  chain_id: string | null;
  siwe: { domain: string; uri: string };
}

interface Merchant {
  display_name: string | null;
  business_name: string | null;
  country: string | null;
  display_currency: string;
  wallet_address: string | null;
}

const STATEMENT = 'Connect this wallet to receive payments.';
const SIGNATURE_VALID_MS = 10 * 60 * 1000;

const root = byId('onboarding');
const token = root.dataset.token!;
const apiBase = `/onboarding/api/${encodeURIComponent(token)}`;
const problem = byId('onboarding-error');
const progress = byId('onboarding-progress');
const connectButton = byId<HTMLButtonElement>('connect-button');
const walletShown = byId('wallet-connected');
const walletAddress = byId('wallet-address');
const detailsForm = byId<HTMLFormElement>('details-form');
const detailsFields = byId<HTMLFieldSetElement>('details-fields');
const finishButton = byId<HTMLButtonElement>('finish-button');
const terms = byId<HTMLInputElement>('accept-terms');

/** Plain words for the failures of this page (DESIGN §4 error codes). */
function explain(e: unknown): string {
  if (e instanceof WalletError) return e.message;
  if (e instanceof ApiError) {
    switch (e.code) {
      case 'wallet_address_conflict':
        return 'This wallet is already used by another merchant. Connect a different wallet.';
      case 'not_found':
        return 'This link was already used or is unknown. Ask for a new onboarding link.';
      case 'onboarding_link_expired':
        return 'This onboarding link has expired. Ask the partner who sent it for a new link; what you set up so far is kept.';
      case 'wallet_mismatch':
        return `This is not the wallet registered for this merchant. Connect the wallet ${e.body.expected_wallet_address ?? 'given at sign-up'}.`;
      case 'invalid_signature':
        return 'The signature could not be checked. Please connect your wallet again.';
      case 'chain_unavailable':
        return 'We cannot reach the network to check your wallet’s signature right now, so nothing was changed. Please try again in a few minutes.';
      case 'terms_not_accepted':
        return 'Please read and accept the terms to finish.';
      case 'wallet_required':
        return 'Connect your wallet first.';
      case 'invalid_request':
        return 'Some details need fixing: see the messages next to the fields.';
    }
  }
  return commonProblem(e) ?? 'Something went wrong. Please try again.';
}

/** Set once the API says the link no longer works; no button comes back to life after that. */
let linkDead = false;

function fail(e: unknown): void {
  say(progress, '');
  say(problem, explain(e));
  // The message sits above the steps; after "Finish setup" at the bottom it would be out of sight.
  problem.scrollIntoView({ block: 'nearest' });
  // A spent, unknown or expired link cannot recover on this page: nothing left to click.
  if (e instanceof ApiError && (e.code === 'not_found' || e.code === 'onboarding_link_expired')) {
    linkDead = true;
    connectButton.disabled = true;
    detailsFields.disabled = true;
  }
}

function walletConnected(address: string): void {
  walletAddress.textContent = address;
  walletShown.hidden = false;
  connectButton.textContent = 'Connect a different wallet';
  connectButton.classList.replace('primary', 'secondary');
  detailsFields.disabled = false;
  byId('details-locked').hidden = true;
  document.getElementById('expected-wallet-hint')?.setAttribute('hidden', '');
  byId('step-wallet').dataset.done = 'true';
}

async function connect(): Promise<void> {
  connectButton.disabled = true;
  say(problem, '');
  try {
    const eth = injectedWallet();
    say(progress, 'Connecting to your wallet…');
    const account = await requestAccount(eth);
    // A fresh nonce: each wallet proof spends the one it signed.
    const state = await api<OnboardingState>('GET', apiBase);
    // Payments arrive on the merchant's network: prove the wallet there, so a wallet that cannot use it shows now.
    if (state.chain_id) await ensureChain(eth, BigInt(state.chain_id));
    const message = siweMessage({
      domain: state.siwe.domain,
      address: account,
      statement: STATEMENT,
      uri: state.siwe.uri,
      chainId: await walletChainId(eth),
      nonce: state.nonce,
      issuedAt: new Date(),
      expirationTime: new Date(Date.now() + SIGNATURE_VALID_MS),
    });
    say(progress, 'Sign the message in your wallet. Signing is free and sends no transaction.');
    const signature = await signText(eth, account, message);
    const proved = await api<OnboardingState>('POST', `${apiBase}/wallet`, { message, signature });
    say(progress, 'Wallet connected.');
    walletConnected(proved.wallet_address ?? account);
    byId<HTMLInputElement>('display-name').focus();
  } catch (e) {
    fail(e);
  } finally {
    connectButton.disabled = linkDead;
  }
}

function clearFieldErrors(): void {
  for (const el of Array.from(detailsForm.querySelectorAll<HTMLElement>('.field-error'))) say(el, '');
  for (const el of Array.from(detailsForm.querySelectorAll<HTMLElement>('[aria-invalid]'))) el.removeAttribute('aria-invalid');
}

const FIELD_WORDS: Record<string, string> = {
  display_name: 'Use at most 120 characters.',
  business_name: 'Use at most 120 characters.',
  country: 'Use the two-letter country code, for example DE, US or IN.',
  display_currency: 'Choose one of the listed currencies.',
};

function showFieldErrors(e: unknown): void {
  if (!(e instanceof ApiError) || !Array.isArray(e.body.errors)) return;
  for (const { field } of e.body.errors as { field: string }[]) {
    const input = detailsForm.querySelector<HTMLElement>(`[name="${CSS.escape(field)}"]`);
    const error = document.getElementById(`${field.replace(/_/g, '-')}-error`);
    if (!input || !error) continue;
    input.setAttribute('aria-invalid', 'true');
    say(error, FIELD_WORDS[field] ?? 'Please check this field.');
  }
}

async function finish(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  say(problem, '');
  clearFieldErrors();
  if (!terms.checked) {
    say(byId('accept-terms-error'), 'Please read and accept the terms to finish.');
    terms.setAttribute('aria-invalid', 'true');
    terms.focus();
    return;
  }
  const form = new FormData(detailsForm);
  const body: Record<string, unknown> = { accept_terms: true };
  for (const name of ['display_name', 'business_name', 'country', 'display_currency']) {
    const value = String(form.get(name) ?? '').trim();
    if (value) body[name] = name === 'country' ? value.toUpperCase() : value;
  }
  finishButton.disabled = true;
  say(progress, 'Saving…');
  try {
    const done = await api<{ merchant: Merchant }>('POST', `${apiBase}/complete`, body);
    showDone(done.merchant);
  } catch (e) {
    showFieldErrors(e);
    fail(e);
  } finally {
    finishButton.disabled = false;
  }
}

function showDone(m: Merchant): void {
  say(progress, '');
  byId('steps').hidden = true;
  byId('done-name').textContent = shownName(m.display_name, m.business_name) ?? '—';
  byId('done-wallet').textContent = m.wallet_address ?? '—';
  byId('done-currency').textContent = m.display_currency.toUpperCase();
  const done = byId('done');
  done.hidden = false;
  byId('done-title').focus();
}

connectButton.addEventListener('click', () => void connect());
detailsForm.addEventListener('submit', (e) => void finish(e));
terms.addEventListener('change', () => {
  if (terms.checked) {
    say(byId('accept-terms-error'), '');
    terms.removeAttribute('aria-invalid');
  }
});
