import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Db } from '../../database/db';

/** How long a portal session lasts from sign-in, whatever the activity. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** What a signed-in request knows about its user; attached to the request by PortalSessionGuard. */
export interface PortalSession {
  userId: string;
  email: string;
  partnerId: string;
  partnerName: string;
  partnerSlug: string;
  csrfToken: string;
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** 32 random bytes, base64url: the cookie's session token, the CSRF tokens. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

function sessionId(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Constant-time equality of two tokens of any length (hashed first, so lengths leak nothing either). */
export function sameToken(a: unknown, b: string): boolean {
  if (typeof a !== 'string' || a.length === 0 || a.length > 256) return false;
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/**
 * Portal sessions in Postgres, so any instance serves any user. The cookie holds a random token; the row is
 * keyed by its SHA-256, so a copy of the table holds no usable cookie. Each session carries its own CSRF
 * token (synchronizer pattern): every form repeats it and every POST is checked against it.
 */
@Injectable()
export class PortalSessionsService {
  constructor(private readonly db: Db) {}

  /** A new session for the user; returns the cookie token. The user's expired sessions are swept here. */
  async create(userId: string): Promise<{ token: string; expiresAt: Date }> {
    const token = randomToken();
    await this.db.query(`DELETE FROM portal_sessions WHERE user_id = $1 AND expires_at <= now()`, [userId]);
    const [row] = await this.db.query<{ expires_at: Date }>(
      `INSERT INTO portal_sessions (id, user_id, csrf_token, expires_at)
       VALUES ($1, $2, $3, now() + $4::int * interval '1 millisecond') RETURNING expires_at`,
      [sessionId(token), userId, randomToken(), SESSION_TTL_MS],
    );
    return { token, expiresAt: row.expires_at };
  }

  /** The live session the token names, touched as seen now; null when unknown, malformed or expired. */
  async resolve(token: string | undefined): Promise<PortalSession | null> {
    if (!token || !TOKEN_SHAPE.test(token)) return null;
    const [row] = await this.db.query<{ user_id: string; email: string; partner_id: string; name: string; slug: string; csrf_token: string }>(
      `UPDATE portal_sessions s SET last_seen_at = now()
         FROM portal_users u, partners p
        WHERE s.id = $1 AND s.expires_at > now() AND u.id = s.user_id AND p.id = u.partner_id
       RETURNING s.user_id, u.email, u.partner_id, p.name, p.slug, s.csrf_token`,
      [sessionId(token)],
      'portal_session_resolve',
    );
    if (!row) return null;
    return {
      userId: row.user_id,
      email: row.email,
      partnerId: row.partner_id,
      partnerName: row.name,
      partnerSlug: row.slug,
      csrfToken: row.csrf_token,
    };
  }

  async destroy(token: string | undefined): Promise<void> {
    if (!token || !TOKEN_SHAPE.test(token)) return;
    await this.db.query(`DELETE FROM portal_sessions WHERE id = $1`, [sessionId(token)]);
  }
}
