import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each notification attempt keeps the address it was sent to. A merchant's note follows the merchant's email
 * from attempt to attempt (notifications."to" is the latest), so without this an attempt that ended in doubt
 * at an old address would no longer say where it may have arrived. Null for attempts stored before, and for
 * attempts never claimed (not built, not fitting their request any more).
 */
export class NotificationAttemptRecipient1764000402600 implements MigrationInterface {
  name = 'NotificationAttemptRecipient1764000402600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_attempts ADD COLUMN "to" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_attempts DROP COLUMN "to"`);
  }
}
