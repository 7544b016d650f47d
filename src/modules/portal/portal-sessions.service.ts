import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { randomToken, sameToken, SESSION_TOKEN_SHAPE, sessionKey } from '../../common/crypto/session-token';
import { PartnersService } from '../partners/partners.service';
import { PortalSessionRepository } from './portal-session.repository';
import type { PortalRole } from './portal-user.entity';

/** How long a portal session lasts from sign-in, whatever the activity. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** A session unused this long is over too (issue 10 point 10), well before its 12 hours. */
export const SESSION_IDLE_MS = 60 * 60 * 1000;

/** What a signed-in request knows about its user; attached to the request by PortalSessionGuard. */
export interface PortalSession {
  /** The row's key (SHA-256 of the cookie's token): what "this session" means when the others are ended. */
  sessionId: Buffer;
  userId: string;
  email: string;
  role: PortalRole;
  partnerId: string;
  partnerName: string;
  partnerSlug: string;
  csrfToken: string;
}

const TOKEN_SHAPE = SESSION_TOKEN_SHAPE;
const sessionId = sessionKey;
export { randomToken, sameToken };

/**
 * Portal sessions in Postgres, so any instance serves any user. The cookie holds a random token; the row is
 * keyed by its SHA-256, so a copy of the table holds no usable cookie. Each session carries its own CSRF
 * token (synchronizer pattern): every form repeats it and every POST is checked against it.
 */
@Injectable()
export class PortalSessionsService {
  constructor(private readonly repo: PortalSessionRepository, private readonly partners: PartnersService) {}

  /** A new session for the user; returns the cookie token. The user's ended sessions are swept here. */
  /**
   * In em's transaction when given (a sign-in stores its audit row with it), every statement on em's
   * connection: one from the pool besides it, awaited by twenty sign-ins at once, would hang the pool.
   */
  async create(userId: string, em?: EntityManager): Promise<{ token: string; expiresAt: Date }> {
    const token = randomToken();
    await this.repo.deleteEndedOf(userId, SESSION_IDLE_MS, em);
    const expiresAt = await this.repo.insert(sessionId(token), userId, randomToken(), SESSION_TTL_MS, em);
    return { token, expiresAt };
  }

  /** The live session the token names, touched as seen now; null when unknown, malformed, expired or idle. */
  async resolve(token: string | undefined): Promise<PortalSession | null> {
    if (!token || !TOKEN_SHAPE.test(token)) return null;
    const id = sessionId(token);
    const row = await this.repo.findLive(id, SESSION_IDLE_MS);
    if (!row) return null;
    const [partner] = await Promise.all([this.partners.get(row.partnerId), this.repo.touch(id)]);
    return {
      sessionId: id,
      userId: row.userId,
      email: row.email,
      role: row.role,
      partnerId: row.partnerId,
      partnerName: partner.name,
      partnerSlug: partner.slug,
      csrfToken: row.csrfToken,
    };
  }

  async destroy(token: string | undefined): Promise<void> {
    if (!token || !TOKEN_SHAPE.test(token)) return;
    await this.repo.delete(sessionId(token));
  }
}
