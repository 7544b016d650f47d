import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { PartnerLimiter } from '../../common/rate-limit/partner-limiter';
import { normalizeEmail, PortalUsersService } from './portal-users.service';
import { PortalSessionsService } from './portal-sessions.service';

/** Sign-in attempts per minute, counted per client address and, separately, per email address. */
export const LOGIN_ATTEMPTS_PER_MINUTE = 10;

/**
 * Sign-in and sign-out. Attempts are counted before the password is checked, so a flood is refused before
 * it costs a scrypt run each; over the limit → rate_limited (429). The counters are Redis minute windows
 * (PartnerLimiter), shared by every instance.
 */
@Injectable()
export class PortalAuthService {
  constructor(
    private readonly users: PortalUsersService,
    private readonly sessions: PortalSessionsService,
    private readonly limiter: PartnerLimiter,
  ) {}

  /** A new session's cookie token, or null when email and password do not match (whichever is wrong). */
  async signIn(clientAddress: string, email: unknown, password: unknown): Promise<{ token: string } | null> {
    await this.limiter.consume('portal-login-ip', clientAddress, LOGIN_ATTEMPTS_PER_MINUTE);
    // The email is hashed for the counter's key: Redis keys are not a place for personal data.
    const who = normalizeEmail(email) ?? (typeof email === 'string' ? email.slice(0, 300) : '');
    await this.limiter.consume('portal-login-email', createHash('sha256').update(who).digest('hex').slice(0, 32), LOGIN_ATTEMPTS_PER_MINUTE);
    const user = await this.users.authenticate(email, password);
    if (!user) return null;
    const { token } = await this.sessions.create(user.id);
    return { token };
  }

  signOut(token: string | undefined): Promise<void> {
    return this.sessions.destroy(token);
  }
}
