import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { PortalUserEntity, type PortalRole } from './portal-user.entity';

/** The portal_users table. */
@Injectable()
export class PortalUserRepository {
  constructor(@InjectRepository(PortalUserEntity) private readonly users: Repository<PortalUserEntity>) {}

  /** A unique violation (portal_users_email_key) when the email is taken. */
  async insert(em: EntityManager, partnerId: string, email: string, passwordHash: string, role: PortalRole): Promise<{ id: string; createdAt: Date }> {
    const r = await em
      .getRepository(PortalUserEntity)
      .createQueryBuilder()
      .insert()
      .into(PortalUserEntity)
      .values({ partnerId, email, passwordHash, role })
      .returning(['id', 'createdAt'])
      .execute();
    const row = r.raw[0] as { id: string; created_at: Date };
    return { id: row.id, createdAt: row.created_at };
  }

  findByEmail(email: string): Promise<PortalUserEntity | null> {
    return this.users.findOneBy({ email });
  }

  findById(id: string): Promise<PortalUserEntity | null> {
    return this.users.findOneBy({ id });
  }

  /** The partner's users, oldest first. */
  listOf(partnerId: string): Promise<PortalUserEntity[]> {
    return this.users.find({ where: { partnerId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  /**
   * The partner's users, locked until the transaction ends: every removal and role change of one partner
   * runs after this, one at a time, so two admins removing each other at once cannot leave none.
   */
  lockOf(em: EntityManager, partnerId: string): Promise<PortalUserEntity[]> {
    return em.getRepository(PortalUserEntity).find({ where: { partnerId }, order: { id: 'ASC' }, lock: { mode: 'pessimistic_write' } });
  }

  /** Deletes the user; their sessions go with them (ON DELETE CASCADE). */
  async delete(em: EntityManager, id: string): Promise<void> {
    await em.getRepository(PortalUserEntity).delete({ id });
  }

  async setRole(em: EntityManager, id: string, role: PortalRole): Promise<void> {
    await em.getRepository(PortalUserEntity).update({ id }, { role });
  }

  async setPasswordHash(em: EntityManager, id: string, passwordHash: string): Promise<void> {
    await em.getRepository(PortalUserEntity).update({ id }, { passwordHash });
  }

  /** Replaces the hash only while `was` is still stored (a password change meanwhile wins); whether it did. */
  async rehash(id: string, was: string, passwordHash: string): Promise<boolean> {
    return ((await this.users.update({ id, passwordHash: was }, { passwordHash })).affected ?? 0) > 0;
  }

  /** Whether the user exists with this hash, read FOR SHARE: a change of the hash waits for em's transaction. */
  async holdsHash(em: EntityManager, id: string, passwordHash: string): Promise<boolean> {
    return (await em.getRepository(PortalUserEntity).findOne({ where: { id, passwordHash }, lock: { mode: 'pessimistic_read' } })) !== null;
  }
}
