import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import type { TestService } from '../support/app';
import { call, type Reply } from '../support/http';

export function randomWallet(): Wallet {
  return Wallet.createRandom() as unknown as Wallet;
}

export function randomAddress(): string {
  return `0x${randomBytes(20).toString('hex')}`;
}

/** POST /api/v1/merchants (or the accounts alias) with the given key. */
export function postMerchant(svc: TestService, key: string, body: unknown, path = '/api/v1/merchants'): Promise<Reply> {
  return call(svc.publicUrl, 'POST', path, { key, body });
}

/** A shell merchant (onboarding incomplete); throws unless it was created. */
export async function createShellMerchant(svc: TestService, key: string, body: Record<string, unknown> = {}): Promise<any> {
  const r = await postMerchant(svc, key, body);
  if (r.status !== 201) throw new Error(`merchant create failed: ${r.status} ${r.text}`);
  return r.body;
}

export interface SiweParts {
  domain?: string;
  uri?: string;
  nonce?: string;
  address?: string;
  chainId?: number;
}

/**
 * A Sign-In with Ethereum proof for an onboarding token: the message the page would build (domain, uri and
 * nonce from the onboarding state), with any part overridden, signed by `signer`.
 */
export async function siweProof(
  svc: TestService,
  token: string,
  signer: Wallet,
  parts: SiweParts = {},
): Promise<{ message: string; signature: string }> {
  const state = await call(svc.publicUrl, 'GET', `/onboarding/api/${token}`);
  if (state.status !== 200) throw new Error(`onboarding state failed: ${state.status} ${state.text}`);
  const msg = new SiweMessage({
    domain: parts.domain ?? new URL(svc.config.publicUrl).host,
    address: parts.address ?? signer.address,
    statement: 'Connect this wallet to receive payments.',
    uri: parts.uri ?? `${svc.config.publicUrl}/onboarding/${token}`,
    version: '1',
    chainId: parts.chainId ?? 31337,
    nonce: parts.nonce ?? state.body.nonce,
    issuedAt: new Date().toISOString(),
  });
  const message = msg.prepareMessage();
  return { message, signature: await signer.signMessage(message) };
}
