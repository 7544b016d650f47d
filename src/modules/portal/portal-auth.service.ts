import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppError } from '../../common/errors';
import { addressBucket } from '../../common/rate-limit/client-address';
import { PartnerLimiter } from '../../common/rate-limit/partner-limiter';
import { RedisConnections } from '../../common/redis/redis.module';
import { AuditService } from '../audit/audit.service';
import { normalizeEmail, PortalUsersService } from './portal-users.service';
import { PortalSessionsService } from './portal-sessions.service';

/** Sign-in attempts per minute from one client address (any email): bounds the scrypt work one address causes. */
export const LOGIN_ATTEMPTS_PER_ADDRESS = 30;
/** Sign-in attempts per minute for one email from one client address. */
export const LOGIN_ATTEMPTS_PER_MINUTE = 10;
/** Failures of one email (from any address) in a 15-minute window before its sign-ins from new addresses slow down. */
export const LOGIN_FREE_FAILURES = 5;
/** Failures of one email in the window past which new addresses are refused (429) for that email. */
export const LOGIN_FAILURE_BUDGET = 100;
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60000;
/** The delay added per failure beyond the free ones, and its cap. */
export const LOGIN_DELAY_STEP_MS = 500;
export const LOGIN_DELAY_MAX_MS = 5000;
/** How long an address the owner signed in from stays known, exempt from the per-email slow-down. */
const KNOWN_ADDRESS_TTL_MS = 30 * 24 * 3600 * 1000;
/** How many of a user's latest sign-ins are searched for the address when Redis does not remember it. */
const KNOWN_ADDRESSES_READ = 200;
/** The id an unknown email's sign-ins are read under: no user has it. */
const NO_USER = '00000000-0000-0000-0000-000000000000';

/**
 * Sign-in and sign-out. Limits, all Redis counters shared by every instance, checked before the password
 * so a flood is refused before it costs a scrypt run each:
 * - per client address (IPv6 by /64): LOGIN_ATTEMPTS_PER_ADDRESS a minute, then 429;
 * - per (email, address): LOGIN_ATTEMPTS_PER_MINUTE a minute, then 429;
 * - per email, from any address: failures in the current and the previous 15-minute window (so a window
 *   boundary never hands an attacker a fresh budget). Past LOGIN_FREE_FAILURES each attempt from an
 *   address the owner has not signed in from waits longer (500 ms more per failure, at most 5 s), and past
 *   LOGIN_FAILURE_BUDGET such addresses get 429 for that email. An address the owner signed in from in the
 *   last 30 days is exempt: someone hammering an email from elsewhere cannot lock its owner out. Redis
 *   remembers those addresses; the audit trail's sign-ins stand in when Redis lost them.
 */
@Injectable()
export class PortalAuthService {
  private readonly logger = new Logger('PortalAuth');

  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
    private readonly users: PortalUsersService,
    private readonly sessions: PortalSessionsService,
    private readonly limiter: PartnerLimiter,
    private readonly redis: RedisConnections,
  ) {}

  /**
   * A new session's cookie token, or null when email and password do not match (whichever is wrong). `reqId`:
   * the request's id, which the lines logged here carry (there is no per-request log context).
   */
  async signIn(clientAddress: string, email: unknown, password: unknown, reqId?: unknown): Promise<{ token: string } | null> {
    const address = addressBucket(clientAddress);
    await this.limiter.consume('portal-login-ip', address, LOGIN_ATTEMPTS_PER_ADDRESS);
    // The email is hashed for the counters' keys: Redis keys are not a place for personal data.
    const who = normalizeEmail(email) ?? (typeof email === 'string' ? email.slice(0, 300) : '');
    const emailKey = createHash('sha256').update(who).digest('hex').slice(0, 32);
    await this.limiter.consume('portal-login-email-ip', `${emailKey}:${address}`, LOGIN_ATTEMPTS_PER_MINUTE);
    const now = this.redis.now();
    const windowStart = now - (now % LOGIN_FAILURE_WINDOW_MS);
    const failuresOf = (start: number) => `${this.redis.channel('portal-login-failures')}:${emailKey}:${start}`;
    const failuresKey = failuresOf(windowStart);
    const knownKey = `${this.redis.channel('portal-login-known')}:${emailKey}:${address}`;
    const [failures, remembered] = await this.read([failuresKey, failuresOf(windowStart - LOGIN_FAILURE_WINDOW_MS)], knownKey, reqId);
    // Only asked of Postgres when it matters: the email is under attack and Redis does not remember the address.
    const known = remembered || (failures > LOGIN_FREE_FAILURES && (await this.signedInFrom(email, address, knownKey, reqId)));
    if (!known && failures > LOGIN_FREE_FAILURES) {
      if (failures > LOGIN_FAILURE_BUDGET) throw new AppError('rate_limited');
      // Before the password check, so a right and a wrong password wait alike.
      await new Promise((r) => setTimeout(r, Math.min((failures - LOGIN_FREE_FAILURES) * LOGIN_DELAY_STEP_MS, LOGIN_DELAY_MAX_MS)));
    }
    const user = await this.users.authenticate(email, password);
    if (!user) {
      // Kept through the next window too, where it still counts as the previous one.
      await this.redis.hitWindow(failuresKey, windowStart + 2 * LOGIN_FAILURE_WINDOW_MS + 1000).catch((e: Error) => this.logger.error({ reqId }, `cannot count a sign-in failure: ${e.message}`));
      return null;
    }
    await this.redis.main.set(knownKey, '1', 'PX', KNOWN_ADDRESS_TTL_MS).catch((e: Error) => this.logger.error({ reqId }, `cannot remember a sign-in address: ${e.message}`));
    // The session and its audit row in one transaction: the partner's trail lists every sign-in, with its address.
    const session = await this.dataSource.transaction(async (em) => {
      // The password changed (or the user was removed) since it was checked: refused like a wrong password.
      if (!(await this.users.passwordStillHolds(em, user))) return null;
      const made = await this.sessions.create(user.id, em);
      await this.audit.record(em, { kind: 'portal_user', userId: user.id, partnerId: user.partnerId, address: clientAddress },
        { partnerId: user.partnerId, action: 'portal_user.signed_in', targetId: user.id, details: { email: user.email } });
      return made;
    });
    return session && { token: session.token };
  }

  /**
   * Whether the email's user signed in from this address (bucket) in the last KNOWN_ADDRESS_TTL_MS, by the audit
   * trail's sign-ins: what Redis forgot when it lost its keys (a restart, a flush), while the attacker's failures
   * start counting again at once (the owner was then locked out with the attacker). Remembered again in
   * Redis when found.
   */
  private async signedInFrom(email: unknown, address: string, knownKey: string, reqId: unknown): Promise<boolean> {
    const userId = await this.users.idOf(email);
    const since = new Date(Date.now() - KNOWN_ADDRESS_TTL_MS);
    // An unknown email's trail is read too (no user has the nil id): the same reads as a known one's, so the
    // answer's time (a 429 costs nothing else) does not tell which emails have a user.
    const addresses = await this.audit.signInAddresses(userId ?? NO_USER, since, KNOWN_ADDRESSES_READ);
    if (!userId || !addresses.some((a) => addressBucket(a) === address)) return false;
    await this.redis.main.set(knownKey, '1', 'PX', KNOWN_ADDRESS_TTL_MS).catch((e: Error) => this.logger.error({ reqId }, `cannot remember a sign-in address: ${e.message}`));
    return true;
  }

  /** The email's failures over the given windows and whether this address is known for it; fails open (0, known) without Redis. */
  private async read(failureKeys: string[], knownKey: string, reqId: unknown): Promise<[number, boolean]> {
    try {
      const values = await this.redis.main.mget(...failureKeys, knownKey);
      const failures = values.slice(0, -1).reduce((sum, v) => sum + Number(v ?? 0), 0);
      return [failures, values[values.length - 1] !== null];
    } catch (e) {
      this.logger.error({ reqId }, `cannot reach Redis for sign-in counters, allowing: ${(e as Error).message}`);
      return [0, true];
    }
  }

  signOut(token: string | undefined): Promise<void> {
    return this.sessions.destroy(token);
  }
}
