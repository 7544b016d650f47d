import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThanOrEqual, type Repository } from 'typeorm';
import { PortalSessionEntity } from './portal-session.entity';

/** The portal_sessions table (keyed by the SHA-256 of the cookie's token). */
@Injectable()
export class PortalSessionRepository {
  constructor(@InjectRepository(PortalSessionEntity) private readonly sessions: Repository<PortalSessionEntity>) {}

  async deleteExpiredOf(userId: string): Promise<void> {
    await this.sessions.delete({ userId, expiresAt: LessThanOrEqual(new Date()) });
  }

  /** A session lasting ttlMs from now by the database's clock, the one that judges expiry. */
  async insert(id: Buffer, userId: string, csrfToken: string, ttlMs: number): Promise<Date> {
    const r = await this.sessions
      .createQueryBuilder()
      .insert()
      .into(PortalSessionEntity)
      .values({ id, userId, csrfToken, expiresAt: () => `now() + ${Math.trunc(ttlMs)} * interval '1 millisecond'` })
      .returning(['expiresAt'])
      .execute();
    return (r.raw[0] as { expires_at: Date }).expires_at;
  }

  /** The live session with its user's email and partner; null when unknown or expired. */
  async findLive(id: Buffer): Promise<{ userId: string; email: string; partnerId: string; csrfToken: string } | null> {
    const row = await this.sessions
      .createQueryBuilder('s')
      .innerJoin('s.user', 'u')
      .select('s.user_id', 'userId')
      .addSelect('s.csrf_token', 'csrfToken')
      .addSelect('u.email', 'email')
      .addSelect('u.partner_id', 'partnerId')
      .where('s.id = :id AND s.expires_at > now()', { id })
      .getRawOne<{ userId: string; email: string; partnerId: string; csrfToken: string }>();
    return row ?? null;
  }

  async touch(id: Buffer): Promise<void> {
    await this.sessions.update({ id }, { lastSeenAt: () => 'now()' });
  }

  async delete(id: Buffer): Promise<void> {
    await this.sessions.delete({ id });
  }
}
