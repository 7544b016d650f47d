import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * notification_attempts.handed_over_at: when the attempt's message was about to reach the mail server (it
 * answered DATA) or the SMS provider (just before the request). A worker that dies before that mark handed
 * nothing over: the re-drive then retries the message instead of failing it in doubt, never sent (a crash
 * hunt: a receipt was lost when its worker was killed while the mail server had not even greeted). A nullable
 * column without a default: no rewrite.
 */
export class NotificationHandedOver1764000403300 implements MigrationInterface {
  name = 'NotificationHandedOver1764000403300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_attempts ADD COLUMN handed_over_at timestamp(3) with time zone`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_attempts DROP COLUMN handed_over_at`);
  }
}
