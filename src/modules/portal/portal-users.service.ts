import { Injectable } from '@nestjs/common';
import { AppError, type FieldError } from '../../common/errors';
import { iso } from '../../common/time';
import { Db, isUniqueViolation } from '../../database/db';
import { dummyHash, hashPassword, PASSWORD_MAX, passwordProblem, verifyPassword } from './password';

export interface PortalUser {
  id: string;
  partnerId: string;
  email: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;
const EMAIL_MAX = 254;

/** Emails are compared and stored lower-cased and trimmed; null when it cannot be an email address. */
export function normalizeEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const email = raw.trim().toLowerCase();
  return email.length <= EMAIL_MAX && EMAIL.test(email) ? email : null;
}

/** Partner users of the portal: created by an operator, authenticated by email and password. */
@Injectable()
export class PortalUsersService {
  constructor(private readonly db: Db) {}

  async create(partnerId: string, input: { email?: unknown; password?: unknown }): Promise<Record<string, unknown>> {
    const errors: FieldError[] = [];
    const email = normalizeEmail(input.email);
    if (!email) errors.push({ field: 'email', message: `email must be an email address of at most ${EMAIL_MAX} characters` });
    const problem = passwordProblem(input.password);
    if (problem) errors.push({ field: 'password', message: problem });
    if (errors.length) throw AppError.invalid(errors);
    const [partner] = await this.db.query(`SELECT 1 FROM partners WHERE id = $1`, [partnerId]);
    if (!partner) throw AppError.notFound();
    const hash = await hashPassword(input.password as string);
    try {
      const [row] = await this.db.query<{ id: string; created_at: Date }>(
        `INSERT INTO portal_users (partner_id, email, password_hash) VALUES ($1, $2, $3) RETURNING id, created_at`,
        [partnerId, email, hash],
      );
      return { ok: true, user_id: row.id, partner_id: partnerId, email, created_at: iso(row.created_at) };
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('conflict', { errors: [{ field: 'email', message: 'a portal user with this email exists' }] });
      throw e;
    }
  }

  /**
   * The user when email and password match, else null. An unknown email is checked against a dummy hash,
   * so both failures cost the same scrypt run and look the same to the caller.
   */
  async authenticate(rawEmail: unknown, password: unknown): Promise<PortalUser | null> {
    const email = normalizeEmail(rawEmail);
    const pw = typeof password === 'string' && password.length <= 2 * PASSWORD_MAX ? password : '';
    const [row] = email
      ? await this.db.query<{ id: string; partner_id: string; email: string; password_hash: string }>(
          `SELECT id, partner_id, email, password_hash FROM portal_users WHERE email = $1`,
          [email],
        )
      : [];
    const ok = await verifyPassword(pw, row?.password_hash ?? (await dummyHash()));
    return row && ok ? { id: row.id, partnerId: row.partner_id, email: row.email } : null;
  }
}
