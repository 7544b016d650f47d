import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { DashboardSessionEntity } from './dashboard-session.entity';

/** The dashboard_sessions table (keyed by the SHA-256 of the cookie's token). */
@Injectable()
export class DashboardSessionRepository {
  constructor(@InjectRepository(DashboardSessionEntity) private readonly sessions: Repository<DashboardSessionEntity>) {}

  /** The merchant's sessions that are over, by the absolute or the idle limit. */
  async deleteEndedOf(merchantId: string, idleMs: number): Promise<void> {
    await this.sessions
      .createQueryBuilder()
      .delete()
      .where(`merchant_id = :merchantId AND (expires_at <= now() OR last_seen_at <= now() - :idle * interval '1 millisecond')`, {
        merchantId,
        idle: Math.trunc(idleMs),
      })
      .execute();
  }

  /** Every merchant's sessions that are over (the dashboard's sweep job); how many were removed. */
  async deleteEnded(idleMs: number): Promise<number> {
    const r = await this.sessions
      .createQueryBuilder()
      .delete()
      .where(`expires_at <= now() OR last_seen_at <= now() - :idle * interval '1 millisecond'`, { idle: Math.trunc(idleMs) })
      .execute();
    return r.affected ?? 0;
  }

  /** A session lasting ttlMs from now by the database's clock, the one that judges expiry (TTL bound as a parameter). */
  async insert(id: Buffer, merchantId: string, csrfToken: string, ttlMs: number): Promise<void> {
    await this.sessions.query(
      `INSERT INTO dashboard_sessions (id, merchant_id, csrf_token, expires_at) VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')`,
      [id, merchantId, csrfToken, Math.trunc(ttlMs)],
    );
  }

  /**
   * Marks the live session seen now and returns its merchant and CSRF token; null when unknown, past its
   * absolute expiry, or unused for idleMs (one conditional statement, judged by the database's clock).
   */
  async touchLive(id: Buffer, idleMs: number): Promise<{ merchantId: string; csrfToken: string } | null> {
    const r = await this.sessions
      .createQueryBuilder()
      .update()
      .set({ lastSeenAt: () => 'now()' })
      .where(`id = :id AND expires_at > now() AND last_seen_at > now() - :idle * interval '1 millisecond'`, { id, idle: Math.trunc(idleMs) })
      .returning('merchant_id, csrf_token')
      .updateEntity(false)
      .execute();
    const [row] = r.raw as { merchant_id: string; csrf_token: string }[];
    return row ? { merchantId: row.merchant_id, csrfToken: row.csrf_token } : null;
  }

  async delete(id: Buffer): Promise<void> {
    await this.sessions.delete({ id });
  }
}
