import { hexlify, toQuantity, toUtf8Bytes } from 'ethers';
import { NETWORKS, networkLabel } from '../shared/networks';

/** An EIP-1193 provider, as browser wallets inject it. */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

declare global {
  interface Window {
    ethereum?: Eip1193Provider;
  }
}

export type WalletProblem = 'no_wallet' | 'rejected' | 'wrong_network' | 'failed';

/** A wallet step that failed, with the words to show. */
export class WalletError extends Error {
  constructor(
    readonly problem: WalletProblem,
    message: string,
  ) {
    super(message);
  }
}

const USER_REJECTED = 4001;
const UNRECOGNIZED_CHAIN = 4902;

/** EIP-1193 error code; some wallets nest the original error (MetaMask mobile: data.originalError). */
export function walletErrorCode(e: unknown): number | undefined {
  const err = e as { code?: unknown; data?: { originalError?: { code?: unknown } } } | null;
  if (typeof err?.code === 'number') return err.code;
  const nested = err?.data?.originalError?.code;
  return typeof nested === 'number' ? nested : undefined;
}

export function isRejection(e: unknown): boolean {
  return walletErrorCode(e) === USER_REJECTED;
}

export function injectedWallet(): Eip1193Provider {
  if (!window.ethereum || typeof window.ethereum.request !== 'function') {
    throw new WalletError(
      'no_wallet',
      'No browser wallet was found. Open this page in a browser with a wallet extension, or in your wallet app’s browser.',
    );
  }
  return window.ethereum;
}

/** The first account the wallet lets this page use. */
export async function requestAccount(eth: Eip1193Provider): Promise<string> {
  let accounts: unknown;
  try {
    accounts = await eth.request({ method: 'eth_requestAccounts' });
  } catch (e) {
    if (isRejection(e)) throw new WalletError('rejected', 'You cancelled the connection in your wallet. Nothing was changed; try again when you are ready.');
    throw new WalletError('failed', 'Your wallet could not connect. Please try again.');
  }
  const first = Array.isArray(accounts) ? accounts[0] : undefined;
  if (typeof first !== 'string') throw new WalletError('failed', 'Your wallet did not share an account. Unlock it and try again.');
  return first;
}

export async function walletChainId(eth: Eip1193Provider): Promise<bigint> {
  return BigInt((await eth.request({ method: 'eth_chainId' })) as string);
}

/**
 * Puts the wallet on `chainId`: wallet_switchEthereumChain, and wallet_addEthereumChain when the wallet does
 * not know the chain (4902). Anything short of the wallet reporting that chain is a wrong-network error.
 */
export async function ensureChain(eth: Eip1193Provider, chainId: bigint): Promise<void> {
  if ((await walletChainId(eth)) === chainId) return;
  const wrong = new WalletError(
    'wrong_network',
    `Your wallet is on the wrong network. Switch it to ${networkLabel(chainId.toString())} and try again.`,
  );
  const hex = toQuantity(chainId);
  try {
    await eth.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: hex }] });
  } catch (e) {
    if (walletErrorCode(e) !== UNRECOGNIZED_CHAIN) throw wrong;
    const known = NETWORKS[chainId.toString()];
    if (!known) throw wrong;
    try {
      await eth.request({
        method: 'wallet_addEthereumChain',
        params: [
          {
            chainId: hex,
            chainName: known.name,
            nativeCurrency: known.nativeCurrency,
            rpcUrls: known.rpcUrls,
            ...(known.explorer ? { blockExplorerUrls: [known.explorer] } : {}),
          },
        ],
      });
    } catch {
      throw wrong;
    }
  }
  if ((await walletChainId(eth)) !== chainId) throw wrong;
}

/** personal_sign of a text message (a SIWE message), with a declined or failed signature in words. */
export async function signText(eth: Eip1193Provider, account: string, message: string): Promise<string> {
  try {
    return (await eth.request({ method: 'personal_sign', params: [hexlify(toUtf8Bytes(message)), account] })) as string;
  } catch (e) {
    if (isRejection(e)) {
      throw new WalletError('rejected', 'You declined to sign the message. Signing proves the wallet is yours; it is free and sends nothing.');
    }
    throw new WalletError('failed', 'Your wallet could not sign the message. Please try again.');
  }
}
