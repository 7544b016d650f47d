import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { DashboardNonceEntity } from './dashboard-nonce.entity';

/** The dashboard_nonces table. Expiry is judged by the database's clock, as the sessions' is. */
@Injectable()
export class DashboardNonceRepository {
  constructor(@InjectRepository(DashboardNonceEntity) private readonly nonces: Repository<DashboardNonceEntity>) {}

  /** Stores a new nonce valid for ttlMs (the TTL bound as a parameter, never spliced into the SQL). */
  async insert(nonce: string, ttlMs: number): Promise<void> {
    await this.nonces.query(`INSERT INTO dashboard_nonces (nonce, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')`, [
      nonce,
      Math.trunc(ttlMs),
    ]);
  }

  /** Removes nonces past their time (a used one is already gone); the dashboard's sweep job calls it. */
  async deleteExpired(): Promise<number> {
    const r = await this.nonces.createQueryBuilder().delete().where('expires_at <= now()').execute();
    return r.affected ?? 0;
  }

  /** Uses the nonce up: true only for the one caller that deleted it while it was still valid. */
  async consume(nonce: string): Promise<boolean> {
    const r = await this.nonces.createQueryBuilder().delete().where('nonce = :nonce AND expires_at > now()', { nonce }).execute();
    return (r.affected ?? 0) > 0;
  }
}
