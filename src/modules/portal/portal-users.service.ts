import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppError, type FieldError } from '../../common/errors';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { PartnerLimiter } from '../../common/rate-limit/partner-limiter';
import { isUniqueViolation } from '../../database/pg-errors';
import { PartnersService } from '../partners/partners.service';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { AdminRequired } from './portal-errors';
import { PortalSessionRepository } from './portal-session.repository';
import { PORTAL_ROLES, type PortalRole } from './portal-user.entity';
import { PortalUserRepository } from './portal-user.repository';
import { dummyHash, hashPassword, PASSWORD_MAX, passwordProblem, storedCost, verifyPassword } from './password';

export interface PortalUser {
  id: string;
  partnerId: string;
  email: string;
  role: PortalRole;
}

/** A user whose password was just checked, with the stored hash it was checked against (or made again with). */
export interface AuthenticatedUser extends PortalUser {
  passwordHash: string;
}

export interface PortalUserInfo extends PortalUser {
  createdAt: Date;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;
const EMAIL_MAX = 254;
/** Password-change attempts per user and minute: a stolen session cannot guess the password at scrypt speed. */
export const PASSWORD_CHANGES_PER_MINUTE = 10;

/** Emails are compared and stored lower-cased and trimmed; null when it cannot be an email address. */
export function normalizeEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const email = raw.trim().toLowerCase();
  return email.length <= EMAIL_MAX && EMAIL.test(email) ? email : null;
}

/**
 * A portal user changing the partner's users must still be one of its admins when the change is made, under
 * the users' lock: the session's role was read when the request began, and an invite hashes its password for
 * a tenth of a second after that. A demotion or removal that commits first wins (a removed
 * admin's invite, queued behind the removal, added a new admin). Operators are nobody's user.
 */
function stillAdmin(users: Array<{ id: string; role: PortalRole }>, actor: Actor): void {
  if (actor.kind === 'portal_user' && users.find((u) => u.id === actor.userId)?.role !== 'admin') throw new AdminRequired();
}

function isRole(v: unknown): v is PortalRole {
  return typeof v === 'string' && (PORTAL_ROLES as readonly string[]).includes(v);
}

const conflict = (field: string, message: string) => new AppError('conflict', { errors: [{ field, message }] });

/**
 * Partner users of the portal: created by an operator or by one of the partner's admins, authenticated by
 * email and password. The rule that guards them: a partner never loses its last admin (removal or demotion),
 * and nobody removes themself. Removals and role changes lock the partner's users first, so that rule holds
 * under concurrent changes too.
 */
@Injectable()
export class PortalUsersService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: PortalUserRepository,
    private readonly sessions: PortalSessionRepository,
    private readonly partners: PartnersService,
    private readonly limiter: PartnerLimiter,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async create(partnerId: string, input: { email?: unknown; password?: unknown; role?: unknown }, actor: Actor): Promise<PortalUserInfo> {
    const errors: FieldError[] = [];
    const email = normalizeEmail(input.email);
    if (!email) errors.push({ field: 'email', message: `email must be an email address of at most ${EMAIL_MAX} characters` });
    const problem = passwordProblem(input.password);
    if (problem) errors.push({ field: 'password', message: problem });
    if (!isRole(input.role)) errors.push({ field: 'role', message: 'role must be admin or member' });
    if (errors.length) throw AppError.invalid(errors);
    await this.partners.get(partnerId);
    const hash = await hashPassword(input.password as string, this.config.portalPasswordCost);
    try {
      const row = await this.dataSource.transaction(async (em) => {
        stillAdmin(await this.repo.lockOf(em, partnerId), actor);
        const inserted = await this.repo.insert(em, partnerId, email as string, hash, input.role as PortalRole);
        await this.audit.record(em, actor, { partnerId, action: 'portal_user.added', targetId: inserted.id, details: { email, role: input.role } });
        return inserted;
      });
      return { id: row.id, partnerId, email: email as string, role: input.role as PortalRole, createdAt: row.createdAt };
    } catch (e) {
      if (isUniqueViolation(e)) throw conflict('email', 'a portal user with this email exists');
      throw e;
    }
  }

  /** The partner's users, oldest first; an unknown partner is a 404. */
  async list(partnerId: string): Promise<PortalUserInfo[]> {
    await this.partners.get(partnerId);
    return (await this.repo.listOf(partnerId)).map((u) => ({ id: u.id, partnerId: u.partnerId, email: u.email, role: u.role, createdAt: u.createdAt }));
  }

  /**
   * Removes one of the partner's users and so ends their sessions. Nobody removes themself (an operator is
   * nobody's user). Another partner's user is the same 404 as a missing one.
   */
  async remove(partnerId: string, userId: string, actor: Actor): Promise<void> {
    const actingUserId = actor.kind === 'portal_user' ? actor.userId : undefined;
    await this.partners.get(partnerId);
    await this.dataSource.transaction(async (em) => {
      const users = await this.repo.lockOf(em, partnerId);
      stillAdmin(users, actor);
      const target = users.find((u) => u.id === userId);
      if (!target) throw AppError.notFound();
      if (userId === actingUserId) throw conflict('user_id', 'you cannot remove yourself; another admin can');
      if (target.role === 'admin' && users.filter((u) => u.role === 'admin').length === 1) {
        throw conflict('user_id', 'the last admin cannot be removed; make another user admin first');
      }
      await this.repo.delete(em, userId);
      await this.audit.record(em, actor, { partnerId, action: 'portal_user.removed', targetId: userId, details: { email: target.email, role: target.role } });
    });
  }

  /** Makes one of the partner's users admin or member; the last admin cannot be demoted. */
  async setRole(partnerId: string, userId: string, role: unknown, actor: Actor): Promise<void> {
    if (!isRole(role)) throw AppError.invalid([{ field: 'role', message: 'role must be admin or member' }]);
    await this.dataSource.transaction(async (em) => {
      const users = await this.repo.lockOf(em, partnerId);
      stillAdmin(users, actor);
      const target = users.find((u) => u.id === userId);
      if (!target) throw AppError.notFound();
      if (target.role === 'admin' && role === 'member' && users.filter((u) => u.role === 'admin').length === 1) {
        throw conflict('role', 'the last admin cannot become a member; make another user admin first');
      }
      await this.repo.setRole(em, userId, role);
      await this.audit.record(em, actor, {
        partnerId, action: 'portal_user.role_changed', targetId: userId, details: { email: target.email, role: { from: target.role, to: role } },
      });
    });
  }

  /**
   * Changes the signed-in user's password: the current one is required. Every other session of the user
   * ends in the same transaction; the session that made the change (keepSession) stays signed in.
   */
  async changePassword(
    userId: string,
    keepSession: Buffer,
    input: { current?: unknown; next?: unknown; repeat?: unknown },
    actor: Actor,
  ): Promise<{ otherSessionsEnded: number }> {
    await this.limiter.consume('portal-password', userId, PASSWORD_CHANGES_PER_MINUTE);
    const user = await this.repo.findById(userId);
    if (!user) throw AppError.notFound();
    const current = typeof input.current === 'string' && input.current.length <= 2 * PASSWORD_MAX ? input.current : '';
    if (!(await verifyPassword(current, user.passwordHash))) {
      throw AppError.invalid([{ field: 'current_password', message: 'The current password is not correct.' }]);
    }
    const problem = passwordProblem(input.next);
    if (problem) throw AppError.invalid([{ field: 'new_password', message: `The new ${problem}.` }]);
    if (input.next !== input.repeat) throw AppError.invalid([{ field: 'new_password_repeat', message: 'The new password and its repetition differ.' }]);
    if (input.next === current) throw AppError.invalid([{ field: 'new_password', message: 'The new password is the same as the current one.' }]);
    const hash = await hashPassword(input.next as string, this.config.portalPasswordCost);
    return this.dataSource.transaction(async (em) => {
      await this.repo.setPasswordHash(em, userId, hash);
      const otherSessionsEnded = await this.sessions.deleteOthersOf(em, userId, keepSession);
      // Who and when only: neither password nor hash.
      await this.audit.record(em, actor, {
        partnerId: user.partnerId, action: 'portal_user.password_changed', targetId: userId, details: { other_sessions_ended: otherSessionsEnded },
      });
      return { otherSessionsEnded };
    });
  }

  /** The id of the user with this email, or null. */
  async idOf(rawEmail: unknown): Promise<string | null> {
    const email = normalizeEmail(rawEmail);
    return email ? ((await this.repo.findByEmail(email))?.id ?? null) : null;
  }

  /**
   * The user when email and password match, else null. An unknown email is checked against a dummy hash,
   * so both failures cost the same scrypt run and look the same to the caller.
   */
  async authenticate(rawEmail: unknown, password: unknown): Promise<AuthenticatedUser | null> {
    const email = normalizeEmail(rawEmail);
    const pw = typeof password === 'string' && password.length <= 2 * PASSWORD_MAX ? password : '';
    const row = email ? await this.repo.findByEmail(email) : null;
    const ok = await verifyPassword(pw, row?.passwordHash ?? (await dummyHash(this.config.portalPasswordCost)));
    if (!row || !ok) return null;
    // A hash of another cost is made again at the current one, with the password at hand: until it is, a wrong
    // password for this email costs its old cost, and an unknown email the current one, which a clock tells apart.
    let passwordHash = row.passwordHash;
    if (storedCost(row.passwordHash) !== this.config.portalPasswordCost) {
      const again = await hashPassword(pw, this.config.portalPasswordCost);
      if (await this.repo.rehash(row.id, row.passwordHash, again)) passwordHash = again;
      else {
        // Another sign-in re-hashed it first (or the password changed): the sign-in stands on what is stored now.
        const now = await this.repo.findById(row.id);
        if (!now || !(await verifyPassword(pw, now.passwordHash))) return null;
        passwordHash = now.passwordHash;
      }
    }
    return { id: row.id, partnerId: row.partnerId, email: row.email, role: row.role, passwordHash };
  }

  /**
   * In the sign-in's transaction, before its session is stored: whether the user still exists with the password
   * hash the sign-in checked, read FOR SHARE. A password change (or a removal) that commits first wins: the
   * sign-in is refused; one that commits after waits for the session and then ends it with the others.
   * Without it a sign-in that checked the old password while the change ran kept its session.
   */
  passwordStillHolds(em: EntityManager, user: AuthenticatedUser): Promise<boolean> {
    return this.repo.holdsHash(em, user.id, user.passwordHash);
  }
}
