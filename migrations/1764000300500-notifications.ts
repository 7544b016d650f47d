import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Notifications (DESIGN §6): an outbox of messages written in the transaction of the state change that
 * causes them, and every attempt to send one. UNIQUE (request_id, kind, channel) is the "at most one message
 * per (request or charge, kind)" rule: a charge of a plan is a request, so it holds for charge notices too.
 * message_id is derived from the row id once and kept, so every attempt carries the same Message-ID.
 * lease_until is set while a worker holds the message (between its claim and the recorded outcome).
 * plan_id carries no foreign key: plans are another module's table, and a notice outlives nothing there.
 */
export class Notifications1764000300500 implements MigrationInterface {
  name = 'Notifications1764000300500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE notifications (
        id uuid PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('receipt','charge_notice','merchant_note')),
        channel text NOT NULL CHECK (channel IN ('email','sms')),
        "to" text NOT NULL,
        request_id uuid NOT NULL REFERENCES payment_requests(id),
        plan_id uuid,
        period_index integer,
        due_at timestamptz(3),
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','sent','failed','abandoned')),
        message_id text NOT NULL UNIQUE,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz(3) NOT NULL DEFAULT now(),
        lease_until timestamptz(3),
        last_error text,
        sent_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        CONSTRAINT notifications_request_kind_channel UNIQUE (request_id, kind, channel)
      )`);
    await q.query(`CREATE INDEX notifications_due ON notifications (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX notifications_unsent ON notifications (created_at, id) WHERE status IN ('failed','abandoned')`);
    await q.query(`
      CREATE TABLE notification_attempts (
        id bigserial PRIMARY KEY,
        notification_id uuid NOT NULL REFERENCES notifications(id),
        attempt integer NOT NULL,
        started_at timestamptz(3) NOT NULL DEFAULT now(),
        finished_at timestamptz(3),
        outcome text NOT NULL CHECK (outcome IN ('sending','sent','retry','failed','abandoned','in_doubt')),
        error text,
        response text,
        CONSTRAINT notification_attempts_notification_attempt UNIQUE (notification_id, attempt)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_attempts`);
    await q.query(`DROP TABLE notifications`);
  }
}
