import { Injectable } from '@nestjs/common';
import { AppError, type FieldError } from '../../common/errors';
import { isUniqueViolation } from '../../database/pg-errors';
import { PartnersService } from '../admin/partners.service';
import { PortalUserRepository } from './portal-user.repository';
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
  constructor(private readonly repo: PortalUserRepository, private readonly partners: PartnersService) {}

  async create(partnerId: string, input: { email?: unknown; password?: unknown }): Promise<PortalUser & { createdAt: Date }> {
    const errors: FieldError[] = [];
    const email = normalizeEmail(input.email);
    if (!email) errors.push({ field: 'email', message: `email must be an email address of at most ${EMAIL_MAX} characters` });
    const problem = passwordProblem(input.password);
    if (problem) errors.push({ field: 'password', message: problem });
    if (errors.length) throw AppError.invalid(errors);
    await this.partners.get(partnerId);
    const hash = await hashPassword(input.password as string);
    try {
      const row = await this.repo.insert(partnerId, email as string, hash);
      return { id: row.id, partnerId, email: email as string, createdAt: row.createdAt };
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
    const row = email ? await this.repo.findByEmail(email) : null;
    const ok = await verifyPassword(pw, row?.passwordHash ?? (await dummyHash()));
    return row && ok ? { id: row.id, partnerId: row.partnerId, email: row.email } : null;
  }
}
