import { Injectable } from '@nestjs/common';
import { hashMessage, verifyMessage } from 'ethers';
import { SiweMessage } from 'siwe';
import { isZeroAddress } from '../../common/address';
import { MODES } from '../../config/config';
import { AssetRegistry } from './asset-registry';

export interface SiweExpectation {
  /** Host (with port) of PUBLIC_URL. */
  domain: string;
  uri: string;
  nonce: string;
}

export type SiweVerdict =
  | {
      valid: true;
      address: string;
      chainId: number;
      /** How the signature was accepted: recovered locally, or checked by the wallet contract on chain `chainId`. */
      check: 'ecdsa' | 'contract';
    }
  | { valid: false; field: 'message' | 'signature'; reason: string };

/**
 * DESIGN §5 "contract checks on the mode's chain": a contract wallet's signature only counts when it was
 * checked on the chain of the merchant's mode (its wallet there may have other owners, or not exist). A plain
 * account's signature is chain-independent. Null when the verdict is acceptable, else why not.
 */
export function contractCheckElsewhere(verdict: SiweVerdict & { valid: true }, modeChainId: bigint | undefined): string | null {
  if (verdict.check === 'ecdsa' || (modeChainId !== undefined && BigInt(verdict.chainId) === modeChainId)) return null;
  return `a contract wallet signs in on the chain of the merchant's mode (${modeChainId ?? 'none configured'}), not chain ${verdict.chainId}`;
}

/** The chain that a contract wallet's signature must be checked on could not answer: nothing can be decided. */
export class SignatureCheckUnavailable extends Error {}

/**
 * Contract-signature checks this process runs at once; one more is refused as the chain being unavailable
 * (503: sign a new message, its nonce is spent). Each is an eth_call of code the caller picks (bounded by SIGNATURE_CHECK_GAS), on the node
 * that verification, the chain scan and payers' proofs use: an anonymous sign-in flood must not take it over.
 */
export const MAX_CONTRACT_CHECKS = 4;

/**
 * Sign-In with Ethereum (EIP-4361) for onboarding and the merchant dashboard. A plain account's signature is
 * checked locally; any other is checked as a contract wallet's (ERC-1271, or ERC-6492 before deployment) on
 * the configured chain whose id the message names, so a Safe or a smart wallet signs in like any other.
 * The verdict says which check it was; callers that know the merchant hold a contract check to its mode's
 * chain (contractCheckElsewhere).
 */
@Injectable()
export class SiweVerifier {
  private contractChecks = 0;

  constructor(private readonly assets: AssetRegistry) {}

  async verify(message: string, signature: string, expected: SiweExpectation, now = new Date()): Promise<SiweVerdict> {
    let siwe: SiweMessage;
    try {
      siwe = new SiweMessage(message);
    } catch {
      return { valid: false, field: 'message', reason: 'not an EIP-4361 message' };
    }
    if (siwe.domain !== expected.domain || siwe.uri !== expected.uri || siwe.nonce !== expected.nonce) {
      return { valid: false, field: 'message', reason: 'domain, uri or nonce does not match' };
    }
    // The optional scheme is the rest of the origin (absent: https). A message naming another scheme than
    // PUBLIC_URL's (which `uri` carries) was made for another origin, http://<our host> say, and is refused (a
    // merchant-side hunt). This binds only where the wallet binds the scheme too: wallets that compare host
    // and port alone show no warning either way, so it narrows the attack and does not close it; what closes
    // it is the browser never reaching our host over http, which the Strict-Transport-Security header of an
    // https PUBLIC_URL sees to after the first visit (strictTransport).
    if (siwe.scheme !== undefined && `${siwe.scheme.toLowerCase()}:` !== new URL(expected.uri).protocol) {
      return { valid: false, field: 'message', reason: 'the scheme does not match' };
    }
    // A time the parser takes but Date cannot read (second 60) compares false with everything: refused.
    if ([siwe.issuedAt, siwe.expirationTime, siwe.notBefore].some((t) => t !== undefined && Number.isNaN(Date.parse(t)))) {
      return { valid: false, field: 'message', reason: 'a time in the message cannot be read' };
    }
    // Nobody holds its key, and the contract check's plain-account fallback (ecrecover) answers it for any
    // invalid signature: the zero address proved as a wallet, and anyone signed in as it.
    if (isZeroAddress(siwe.address)) return { valid: false, field: 'message', reason: 'the zero address cannot sign' };
    if (siwe.expirationTime && !(new Date(siwe.expirationTime) > now)) {
      return { valid: false, field: 'message', reason: 'the message has expired' };
    }
    if (siwe.notBefore && new Date(siwe.notBefore) > now) {
      return { valid: false, field: 'message', reason: 'the message is not valid yet' };
    }
    const address = siwe.address.toLowerCase();
    if (recovers(message, signature, address)) return { valid: true, address, chainId: siwe.chainId, check: 'ecdsa' };

    const reader = MODES.map((m) => ({ asset: this.assets.asset(m), reader: this.assets.reader(m) })).find(
      (c) => c.asset && c.reader && c.asset.chainId === BigInt(siwe.chainId),
    )?.reader;
    if (!reader) return { valid: false, field: 'signature', reason: `signature does not match, and chain ${siwe.chainId} is not one of ours` };
    if (this.contractChecks >= MAX_CONTRACT_CHECKS) {
      throw new SignatureCheckUnavailable(`${MAX_CONTRACT_CHECKS} contract signature checks are running; try again`);
    }
    let valid: boolean;
    this.contractChecks++;
    try {
      valid = await reader.isValidSignature(address, hashMessage(message), signature);
    } catch (e) {
      throw new SignatureCheckUnavailable(`chain ${siwe.chainId} could not check a contract signature: ${(e as Error).message}`);
    } finally {
      this.contractChecks--;
    }
    return valid ? { valid: true, address, chainId: siwe.chainId, check: 'contract' } : { valid: false, field: 'signature', reason: 'signature does not match the message' };
  }
}

function recovers(message: string, signature: string, address: string): boolean {
  try {
    return verifyMessage(message, signature).toLowerCase() === address;
  } catch {
    return false; // not a 65-byte ECDSA signature: maybe a contract wallet's
  }
}
