import { Interface } from 'ethers';
import { api, ApiError, commonProblem } from './lib/api';
import { byId, say, wireCopyButtons } from './lib/dom';
import { ensureChain, injectedWallet, isRejection, requestAccount, WalletError } from './lib/wallet';
import { countdownText } from './shared/countdown';
import { isShown, PHASE_TEXT, payPhase, SHOWN_IN, type PayPart, type PayPhase } from './shared/pay-phase';
import { noPayText } from './shared/proof-words';
import type { ProofStatus, RequestStatus } from '../modules/requests/domain/transitions';

/** GET /pay/api/:id (DESIGN §4), the fields this script reads. */
interface PayView {
  request_id: string;
  status: RequestStatus;
  proof_status: ProofStatus;
  amount: string;
  asset_id: string;
  chain_id: string;
  recipient: string;
  expires_at: string;
  tx_hash: string | null;
  /** Set while the attached hash is known not to pay (a pay-rule reason): the payer is asked for the right one. */
  proof_note?: string | null;
}

const ERC20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);
const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const POLL_MS = 2500;
const POLL_SETTLED_MS = 10000;
// A wallet returns the hash before every node has the transaction: the server answers tx_not_found until its
// node sees it, so the page keeps asking for about a minute and a half.
const NOT_FOUND_RETRY_MS = [1000, 2000, 3000, 5000, 8000, 13000, 21000, 34000];

const root = byId('pay');
const id = root.dataset.requestId!;
// The server's clock, not the device's, decides expiry: keep the offset seen at load.
const clockOffset = Number(root.dataset.serverNow) - Date.now();
const statusTitle = byId('status-title');
const statusDetail = byId('status-detail');
const countdown = byId('countdown');
const payButton = byId<HTMLButtonElement>('pay-button');
const payMessage = byId('pay-message');
const proofForm = byId<HTMLFormElement>('proof-form');
const proofInput = byId<HTMLInputElement>('tx-hash');
const proofError = byId('tx-hash-error');
const proofMessage = byId('proof-message');
const paidHash = byId('paid-tx-hash');

let phase = root.dataset.phase as PayPhase;
let expiresAt = Date.parse(root.dataset.expiresAt!);
let pollTimer: number | undefined;
let noteShown = false;

function render(next: PayView): void {
  expiresAt = Date.parse(next.expires_at);
  const nextPhase = payPhase(next.status, next.proof_status, {
    note: next.proof_note ?? null,
    pastDeadline: Date.now() + clockOffset >= expiresAt,
  });
  if (nextPhase !== phase) {
    phase = nextPhase;
    root.dataset.phase = phase;
    // Only a change of phase is announced (the status region is aria-live), never the ticking countdown.
    statusTitle.textContent = PHASE_TEXT[phase].title;
    statusDetail.textContent = PHASE_TEXT[phase].detail;
  }
  for (const part of Object.keys(SHOWN_IN) as PayPart[]) {
    for (const el of Array.from(document.querySelectorAll<HTMLElement>(`[data-part="${part}"]`))) el.hidden = !isShown(part, phase);
  }
  if (next.tx_hash) paidHash.textContent = next.tx_hash;
  // The attached hash is known not to pay: ask for the right one (cleared once it no longer applies).
  const note = next.proof_status === 'attached' && next.proof_note ? noPayText(next.proof_note) : null;
  if (note) say(proofError, note);
  else if (noteShown) say(proofError, '');
  noteShown = note !== null;
  tick();
}

function tick(): void {
  const remaining = expiresAt - (Date.now() + clockOffset);
  countdown.textContent = countdownText(remaining);
  if (remaining <= 0 && phase === 'payable') schedulePoll(0);
}

async function refresh(): Promise<void> {
  try {
    render(await api<PayView>('GET', `/pay/api/${encodeURIComponent(id)}`));
  } catch {
    // A missed poll is retried by the next one.
  }
}

function schedulePoll(delay = phase === 'payable' || phase === 'checking' ? POLL_MS : POLL_SETTLED_MS): void {
  window.clearTimeout(pollTimer);
  // A confirmed payment is final; expired and voided requests are still watched for a late proof.
  if (phase === 'paid') return;
  pollTimer = window.setTimeout(async () => {
    await refresh();
    schedulePoll();
  }, delay);
}

/** The ERC-20 contract from the CAIP-19 asset id `eip155:<chain>/erc20:<address>`. */
function tokenAddress(assetId: string): string {
  const m = /\/erc20:(0x[0-9a-fA-F]{40})$/.exec(assetId);
  if (!m) throw new Error(`unexpected asset id ${assetId}`);
  return m[1];
}

async function submitProof(hash: string, progress: HTMLElement): Promise<PayView> {
  // The transfer is already out: a short outage must not lose its hash, and a just-broadcast transaction may
  // not have reached the server's node yet, so keep trying for a while.
  let failures = 0;
  for (let notFound = 0; ; ) {
    try {
      return await api<PayView>('POST', `/pay/api/${encodeURIComponent(id)}/proof`, { tx_hash: hash });
    } catch (e) {
      if (e instanceof ApiError && e.code === 'tx_not_found' && notFound < NOT_FOUND_RETRY_MS.length) {
        say(progress, 'Waiting for the network to see your transaction…');
        await new Promise((r) => window.setTimeout(r, NOT_FOUND_RETRY_MS[notFound++]));
        continue;
      }
      const transient = !(e instanceof ApiError) || e.status >= 500 || e.status === 429;
      if (!transient || ++failures >= 4) throw e;
      await new Promise((r) => window.setTimeout(r, 1000 * failures));
    }
  }
}

function proofProblem(e: unknown): string {
  if (e instanceof ApiError) {
    switch (e.code) {
      case 'invalid_tx_hash':
        return 'That does not look like a transaction hash: it is 0x followed by 64 letters and digits.';
      case 'tx_hash_already_used':
        return 'This transaction already paid another request.';
      case 'tx_not_found':
        return 'The network does not know this transaction. Check that you copied the whole hash and sent it on the network shown above; if you just sent it, wait a minute and submit it again.';
      case 'tx_does_not_pay':
        return noPayText(typeof e.body.reason === 'string' ? e.body.reason : null);
      case 'proof_already_attached':
        return 'Another transaction was already submitted for this request and is being checked. Wait for that check before submitting a different one.';
      case 'chain_unavailable':
        return 'We cannot reach the network right now, so nothing was recorded. Please submit the hash again in a few minutes.';
      case 'conflict':
        return 'This request is already paid by another transaction.';
      case 'not_found':
        return 'This payment request no longer exists.';
    }
  }
  return commonProblem(e) ?? 'The transaction hash could not be submitted. Please try again.';
}

async function payWithWallet(): Promise<void> {
  payButton.disabled = true;
  say(payMessage, '');
  let sentHash: string | null = null;
  try {
    const eth = injectedWallet();
    const from = await requestAccount(eth);
    // Re-read just before paying: the request may have expired or been cancelled while the page was open.
    const current = await api<PayView>('GET', `/pay/api/${encodeURIComponent(id)}`);
    render(current);
    if (phase !== 'payable') return;
    await ensureChain(eth, BigInt(current.chain_id));
    say(payMessage, 'Confirm the payment in your wallet.');
    const data = ERC20.encodeFunctionData('transfer', [current.recipient, BigInt(current.amount)]);
    try {
      sentHash = (await eth.request({
        method: 'eth_sendTransaction',
        params: [{ from, to: tokenAddress(current.asset_id), data, value: '0x0' }],
      })) as string;
    } catch (e) {
      if (isRejection(e)) throw new WalletError('rejected', 'You declined the payment in your wallet. Nothing was sent.');
      throw new WalletError('failed', 'Your wallet could not send the payment. Check that you hold enough of the token and a little for the network fee, then try again.');
    }
    say(payMessage, 'Payment sent. Letting the merchant know…');
    render(await submitProof(sentHash, payMessage));
    say(payMessage, '');
  } catch (e) {
    if (e instanceof WalletError) say(payMessage, e.message);
    else if (sentHash) say(payMessage, `Your payment was sent, but we could not record it yet (${proofProblem(e)}) Keep this transaction hash and submit it below: ${sentHash}`);
    else say(payMessage, commonProblem(e) ?? 'Something went wrong. Please try again.');
    if (sentHash) proofInput.value = sentHash;
  } finally {
    payButton.disabled = false;
    schedulePoll();
  }
}

async function onProofSubmit(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const hash = proofInput.value.trim();
  say(proofMessage, '');
  if (!TX_HASH.test(hash)) {
    say(proofError, 'That does not look like a transaction hash: it is 0x followed by 64 letters and digits.');
    proofInput.setAttribute('aria-invalid', 'true');
    proofInput.focus();
    return;
  }
  say(proofError, '');
  proofInput.removeAttribute('aria-invalid');
  const button = proofForm.querySelector('button')!;
  button.disabled = true;
  try {
    render(await submitProof(hash, proofMessage));
    say(proofMessage, 'Thank you. We are checking your transaction.');
  } catch (e) {
    say(proofError, proofProblem(e));
    proofInput.setAttribute('aria-invalid', 'true');
  } finally {
    button.disabled = false;
    schedulePoll();
  }
}

function start(): void {
  wireCopyButtons(byId('copy-status'));
  payButton.addEventListener('click', () => void payWithWallet());
  proofForm.addEventListener('submit', (e) => void onProofSubmit(e));
  window.setInterval(tick, 1000);
  // DESIGN §3: the page's script reports the open; a bare GET of the page (a link preview) never does.
  void api<PayView>('POST', `/pay/api/${encodeURIComponent(id)}/open`)
    .then(render, () => undefined)
    .finally(() => schedulePoll());
}

start();
