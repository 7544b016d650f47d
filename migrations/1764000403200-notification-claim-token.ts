import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * notifications.claim_token: a random id the worker writes with its claim of an attempt, so a claim whose
 * COMMIT reached Postgres but whose answer did not (a connection cut at that moment, or closed by the pool's
 * query bound) is recognised as this worker's own: it sends the message then, instead of leaving its lease to
 * run out and the re-drive to fail the message in doubt, never sent. A nullable column without a default: no
 * rewrite, no lock beyond a moment's ACCESS EXCLUSIVE.
 */
export class NotificationClaimToken1764000403200 implements MigrationInterface {
  name = 'NotificationClaimToken1764000403200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notifications ADD COLUMN claim_token uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notifications DROP COLUMN claim_token`);
  }
}
