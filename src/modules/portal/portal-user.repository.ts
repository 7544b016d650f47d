import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { PortalUserEntity } from './portal-user.entity';

/** The portal_users table. */
@Injectable()
export class PortalUserRepository {
  constructor(@InjectRepository(PortalUserEntity) private readonly users: Repository<PortalUserEntity>) {}

  /** A unique violation (portal_users_email_key) when the email is taken. */
  async insert(partnerId: string, email: string, passwordHash: string): Promise<{ id: string; createdAt: Date }> {
    const r = await this.users
      .createQueryBuilder()
      .insert()
      .into(PortalUserEntity)
      .values({ partnerId, email, passwordHash })
      .returning(['id', 'createdAt'])
      .execute();
    const row = r.raw[0] as { id: string; created_at: Date };
    return { id: row.id, createdAt: row.created_at };
  }

  findByEmail(email: string): Promise<PortalUserEntity | null> {
    return this.users.findOneBy({ email });
  }
}
