import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * notification_attempts.handover_tracked: true on attempts claimed by a worker that stores handed_over_at
 * (1764000403300). An attempt without it was claimed by a worker from before that mark (a rolling deploy): its
 * missing mark says nothing, so the re-drive fails it in doubt as before rather than sending the receipt again
 * (a review: a missing mark read as "nothing handed over" could send twice). A constant default: no rewrite.
 */
export class NotificationHandoverTracked1764000403400 implements MigrationInterface {
  name = 'NotificationHandoverTracked1764000403400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_attempts ADD COLUMN handover_tracked boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_attempts DROP COLUMN handover_tracked`);
  }
}
