import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, type Repository } from 'typeorm';
import { PortalSessionEntity } from './portal-session.entity';
import type { PortalRole } from './portal-user.entity';

export interface LiveSessionRow {
  userId: string;
  email: string;
  role: PortalRole;
  partnerId: string;
  csrfToken: string;
}

/** The portal_sessions table (keyed by the SHA-256 of the cookie's token). */
@Injectable()
export class PortalSessionRepository {
  constructor(@InjectRepository(PortalSessionEntity) private readonly sessions: Repository<PortalSessionEntity>) {}

  /** The user's sessions that are over, by the absolute or the idle limit. */
  async deleteEndedOf(userId: string, idleMs: number, em: EntityManager = this.sessions.manager): Promise<void> {
    await em
      .createQueryBuilder()
      .delete()
      .from(PortalSessionEntity)
      .where(`user_id = :userId AND (expires_at <= now() OR last_seen_at <= now() - :idle * interval '1 millisecond')`, {
        userId,
        idle: Math.trunc(idleMs),
      })
      .execute();
  }

  /** A session lasting ttlMs from now by the database's clock, the one that judges expiry. */
  async insert(id: Buffer, userId: string, csrfToken: string, ttlMs: number, em: EntityManager = this.sessions.manager): Promise<Date> {
    const r = await em
      .createQueryBuilder()
      .insert()
      .into(PortalSessionEntity)
      .values({ id, userId, csrfToken, expiresAt: () => `now() + ${Math.trunc(ttlMs)} * interval '1 millisecond'` })
      .returning(['expiresAt'])
      .execute();
    return (r.raw[0] as { expires_at: Date }).expires_at;
  }

  /**
   * The live session with its user's email, role and partner; null when unknown, past its absolute expiry,
   * or unused for idleMs (both judged by the database's clock).
   */
  async findLive(id: Buffer, idleMs: number): Promise<LiveSessionRow | null> {
    const row = await this.sessions
      .createQueryBuilder('s')
      .innerJoin('s.user', 'u')
      .select('s.user_id', 'userId')
      .addSelect('s.csrf_token', 'csrfToken')
      .addSelect('u.email', 'email')
      .addSelect('u.role', 'role')
      .addSelect('u.partner_id', 'partnerId')
      .where(`s.id = :id AND s.expires_at > now() AND s.last_seen_at > now() - :idle * interval '1 millisecond'`, { id, idle: Math.trunc(idleMs) })
      .getRawOne<LiveSessionRow>();
    return row ?? null;
  }

  async touch(id: Buffer): Promise<void> {
    await this.sessions.update({ id }, { lastSeenAt: () => 'now()' });
  }

  async delete(id: Buffer): Promise<void> {
    await this.sessions.delete({ id });
  }

  /** Ends every session of the user except the one named (the one that changed the password). */
  async deleteOthersOf(em: EntityManager, userId: string, keep: Buffer): Promise<number> {
    const r = await em
      .createQueryBuilder()
      .delete()
      .from(PortalSessionEntity)
      .where('user_id = :userId AND id <> :keep', { userId, keep })
      .execute();
    return r.affected ?? 0;
  }
}
