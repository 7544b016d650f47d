import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SiweMessage } from 'siwe';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { randomToken, SESSION_TOKEN_SHAPE, sessionKey } from '../../common/crypto/session-token';
import { AppError } from '../../common/errors';
import { contractCheckElsewhere, SignatureCheckUnavailable, SiweVerifier } from '../chain/siwe-verifier.service';
import type { Merchant } from '../merchants/merchant';
import { MerchantsService } from '../merchants/merchants.service';
import { DashboardNonceRepository } from './dashboard-nonce.repository';
import { DashboardSessionRepository } from './dashboard-session.repository';

/** DESIGN §5: a nonce is good for 10 minutes, once. */
export const NONCE_TTL_MS = 10 * 60 * 1000;
/** A session lasts 7 days from sign-in whatever the activity, and ends after an hour unused. */
export const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const SESSION_IDLE_MS = 60 * 60 * 1000;

/** What a signed-in dashboard call knows; attached to the request by DashboardSessionGuard. */
export interface DashboardSession {
  /** The row's key (SHA-256 of the cookie's token). */
  sessionKey: Buffer;
  csrfToken: string;
  merchant: Merchant;
}

/** The 401 of a failed sign-in: the same code whatever was wrong (message, nonce, domain, uri, expiry, signature). */
function invalidSignature(field: string, message: string): AppError {
  return new AppError('invalid_signature', { errors: [{ field, message }] }, undefined, 401);
}

/**
 * Sign-In with Ethereum for merchants (DESIGN §5, §8): server-side single-use nonces, the signature checked
 * first (plain accounts, ERC-1271 and ERC-6492 wallets, through SiweVerifier), then the merchant. Sessions
 * live in Postgres, keyed by the SHA-256 of the cookie's token, each with its own CSRF token.
 */
@Injectable()
export class DashboardAuthService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly nonces: DashboardNonceRepository,
    private readonly sessions: DashboardSessionRepository,
    private readonly verifier: SiweVerifier,
    private readonly merchants: MerchantsService,
  ) {}

  /** What the EIP-4361 message must name: PUBLIC_URL's host (with port) and PUBLIC_URL/dashboard. */
  get expected(): { domain: string; uri: string } {
    return { domain: new URL(this.config.publicUrl).host, uri: `${this.config.publicUrl}/dashboard` };
  }

  async nonce(): Promise<string> {
    // SIWE nonces are alphanumeric, at least 8 characters.
    const nonce = randomBytes(16).toString('hex');
    await this.nonces.insert(nonce, NONCE_TTL_MS);
    return nonce;
  }

  /**
   * The nonce is used up by the first attempt that names it, whatever the outcome, so a signed message can
   * never be replayed. Bad anything → 401 invalid_signature (even for a wallet no merchant has); a good
   * signature by a wallet with no onboarded merchant → 403 not_a_merchant.
   */
  async signIn(message: string, signature: string): Promise<{ token: string; csrfToken: string; merchant: Merchant }> {
    let nonce: string;
    try {
      nonce = new SiweMessage(message).nonce;
    } catch {
      throw invalidSignature('message', 'not an EIP-4361 message');
    }
    if (!(await this.nonces.consume(nonce))) throw invalidSignature('message', 'unknown, used or expired nonce');
    let verdict;
    try {
      verdict = await this.verifier.verify(message, signature, { ...this.expected, nonce });
    } catch (e) {
      if (e instanceof SignatureCheckUnavailable) throw new AppError('chain_unavailable');
      throw e;
    }
    if (!verdict.valid) throw invalidSignature(verdict.field, verdict.reason);
    const merchant = await this.merchants.signedInBy(verdict.address);
    if (!merchant) throw new AppError('not_a_merchant');
    const elsewhere = contractCheckElsewhere(verdict, this.config.chains[merchant.testMode ? 'test' : 'live']?.chainId);
    if (elsewhere) throw invalidSignature('message', elsewhere);
    const token = randomToken();
    const csrfToken = randomToken();
    await this.sessions.deleteEndedOf(merchant.id, SESSION_IDLE_MS);
    await this.sessions.insert(sessionKey(token), merchant.id, csrfToken, SESSION_TTL_MS);
    return { token, csrfToken, merchant };
  }

  /** The live session the cookie's token names, marked seen now; null when unknown, malformed, expired or idle. */
  async resolve(token: string | undefined): Promise<DashboardSession | null> {
    if (!token || !SESSION_TOKEN_SHAPE.test(token)) return null;
    const key = sessionKey(token);
    const live = await this.sessions.touchLive(key, SESSION_IDLE_MS);
    if (!live) return null;
    return { sessionKey: key, csrfToken: live.csrfToken, merchant: await this.merchants.mustLoad(live.merchantId) };
  }

  async signOut(session: DashboardSession): Promise<void> {
    await this.sessions.delete(session.sessionKey);
  }
}
