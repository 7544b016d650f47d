import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, type Repository } from 'typeorm';
import type { Mode } from '../../config/config';
import type { ApiKeyInfo } from './api-key';
import { ApiKeyEntity } from './api-key.entity';
import type { Scope } from './scopes';

/** The api_keys table. Only hashes are stored; the lookup by hash is behind ApiKeyService's cache. */
@Injectable()
export class ApiKeyRepository {
  constructor(@InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>) {}

  /** The key with this hash, revoked or not (`revokedAt` says). */
  findByHash(hash: Buffer): Promise<Pick<ApiKeyEntity, 'id' | 'partnerId' | 'mode' | 'scopes' | 'revokedAt'> | null> {
    return this.keys.findOne({
      select: { id: true, partnerId: true, mode: true, scopes: true, revokedAt: true },
      where: { keyHash: hash },
    });
  }

  /**
   * Runs `write` in a transaction that first takes the key's row FOR SHARE, unless the key is revoked (then
   * null and nothing runs). The transaction is opened here, not in a service, because the lock is the point:
   * the caller's write (another module's repository, on the `em` given) is all that runs inside it. A
   * revocation takes the row FOR NO KEY UPDATE, so it waits for the write to commit, and a write that reaches
   * this point after a revocation committed finds the key revoked.
   */
  whileLive<T>(keyId: string, write: (em: EntityManager) => Promise<T>): Promise<{ result: T } | null> {
    return this.keys.manager.transaction(async (em) => {
      const live = await em.query<unknown[]>(`SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL FOR SHARE`, [keyId]);
      return live.length === 1 ? { result: await write(em) } : null;
    });
  }

  /** A foreign-key violation when the partner does not exist. */
  async insert(em: EntityManager, k: { partnerId: string; mode: Mode; scopes: Scope[]; keyHash: Buffer; displayPrefix: string; label: string | null }): Promise<ApiKeyInfo> {
    const r = await em.getRepository(ApiKeyEntity).createQueryBuilder().insert().into(ApiKeyEntity).values(k).returning(['id', 'createdAt']).execute();
    const row = r.raw[0] as { id: string; created_at: Date };
    return { id: row.id, mode: k.mode, scopes: k.scopes, displayPrefix: k.displayPrefix, label: k.label, createdAt: row.created_at, revokedAt: null };
  }

  async listByPartner(partnerId: string): Promise<ApiKeyInfo[]> {
    const rows = await this.keys.find({ where: { partnerId }, order: { createdAt: 'ASC', id: 'ASC' } });
    return rows.map((k) => ({
      id: k.id, mode: k.mode, scopes: k.scopes as Scope[], displayPrefix: k.displayPrefix, label: k.label, createdAt: k.createdAt, revokedAt: k.revokedAt,
    }));
  }

  /**
   * Marks the partner's key revoked (keeping the first revocation time); null when the partner has no such key.
   * `alreadyRevoked` tells a repeated revocation (the row as it was, read under the UPDATE's lock).
   */
  async revoke(
    em: EntityManager,
    partnerId: string,
    keyId: string,
  ): Promise<{ keyHash: Buffer; revokedAt: Date; displayPrefix: string; alreadyRevoked: boolean } | null> {
    // A top-level UPDATE comes back from query() as [rows, count].
    const [rows] = await em.query<[Array<{ key_hash: Buffer; revoked_at: Date; display_prefix: string; already_revoked: boolean }>, number]>(
      `UPDATE api_keys k SET revoked_at = COALESCE(k.revoked_at, now())
         FROM (SELECT id, revoked_at FROM api_keys WHERE id = $1 AND partner_id = $2 FOR NO KEY UPDATE) old
        WHERE k.id = old.id
       RETURNING k.key_hash, k.revoked_at, k.display_prefix, old.revoked_at IS NOT NULL AS already_revoked`,
      [keyId, partnerId],
    );
    const row = rows[0];
    return row ? { keyHash: row.key_hash, revokedAt: row.revoked_at, displayPrefix: row.display_prefix, alreadyRevoked: row.already_revoked } : null;
  }
}
