import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isLockTimeout } from '../../database/pg-errors';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { isOneEmailAddress } from '../../common/email-address';
import { AssetRegistry } from '../chain/asset-registry';
import { MerchantContacts } from '../merchants/merchant-contacts.service';
import { MetricsService } from '../ops/metrics.service';
import { nextStep, noLongerFits, recipientNow, retriesSince, type SendResult, type StoredNotification } from './notification';
import { NotificationRequestsPort, type NotifiedRequest } from './notification-facts.port';
import { NotificationQueue } from './notification.queue';
import { NotificationsRepository, type AttemptResult } from './notifications.repository';
import { SmsClient } from './sms-client';
import { SmtpMailer, type ComposedEmail } from './smtp-mailer';
import { renderEmail, renderSms, txUrl, type MessageFacts } from './templates';

/**
 * One send, waiting for the connection included, ends within this many send timeouts (NOTIFY_SEND_TIMEOUT_MS
 * bounds each SMTP phase and each reply, not their sum; a server slow on every step would otherwise take
 * as long as it likes).
 */
export const SEND_DEADLINE_TIMEOUTS = 2;
/**
 * A message is held this many send timeouts: the send's deadline plus one timeout to record its outcome, so
 * only a vanished worker outlives it and the re-drive never declares in doubt a send that ended.
 */
export const LEASE_TIMEOUTS = 3;
/** The first wait before storing a send's outcome again when Postgres did not take it; it doubles up to the next. */
const RECORD_RETRY_FIRST_MS = 100;
const RECORD_RETRY_MAX_MS = 2000;
/** Reads of a message's facts per job when the merchant's email keeps changing between a read and the claim. */
const MAX_READS = 3;
/** How long the claim waits for the request's or the merchant's row (lock_timeout, ms). */
const CLAIM_LOCK_TIMEOUT_MS = 2000;

/** What the claim found: taken by this run or another, the facts changed since the read, or the message no longer fits. */
type ClaimOutcome = { kind: 'claimed' | 'taken' | 'changed' } | { kind: 'misfit'; why: string };

/** A message ready for its channel, or the reason this worker cannot send it. */
type Built =
  | { channel: 'email'; email: ComposedEmail }
  | { channel: 'sms'; sms: { to: string; body: string; messageId: string } }
  | { channel: 'off'; error: string }
  /** Never sendable: an email row whose `to` is not one plain address (written before the outbox checked it). */
  | { channel: 'refused'; error: string };

/**
 * The message cannot be made from what is stored: its request is gone, or a template or the composer refuses
 * the facts as read (a currency code Intl rejects...). Not a failed read: it fails alike until the data changes.
 */
class UnbuildableMessage extends Error {}

/**
 * One attempt of one message: build it from the stored request and merchant, claim it (lease + attempt row
 * 'sending', committed) while those still call for it as built, send it within its deadline, record the
 * outcome and schedule the next attempt as a new delayed job. Building comes before the claim, so a failure
 * to read (Postgres away) leaves nothing in doubt: BullMQ retries the job, and the re-drive adds it again
 * once those retries are spent, for as long as it takes. A message that cannot be built from facts that were
 * read is retried the same way (an operator may repair the data), its reason kept in last_error, until it is
 * NOTIFY_GIVE_UP_MS old: then it is abandoned (never sent), like a send that kept failing, rather than
 * retried without end.
 */
@Injectable()
export class NotificationSender {
  private readonly logger = new Logger('NotificationSender');
  private readonly mailer: SmtpMailer | null;
  private readonly sms: SmsClient | null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: NotificationsRepository,
    private readonly queue: NotificationQueue,
    private readonly requests: NotificationRequestsPort,
    private readonly merchants: MerchantContacts,
    private readonly assets: AssetRegistry,
    private readonly metrics: MetricsService,
    private readonly dataSource: DataSource,
  ) {
    this.mailer = config.smtpUrl
      ? new SmtpMailer(config.smtpUrl, config.mailFrom ?? `no-reply@${new URL(config.publicUrl).hostname}`, config.notifySendTimeoutMs)
      : null;
    this.sms = config.sms ? new SmsClient(config.sms, config.notifySendTimeoutMs) : null;
  }

  async attempt(id: string, attempt: number): Promise<void> {
    const row = await this.repo.waitingFor(id, attempt);
    if (!row) {
      this.logger.debug(`attempt ${attempt} of notification ${id} not due; job ignored`);
      return;
    }
    for (let read = 1; ; read++) {
      let message: Built;
      let to: string;
      try {
        const { facts, request, merchantEmail } = await this.factsOf(row);
        // A charge paid (or a payment lost to a reorg) while its message waited: not sent, never.
        const misfit = noLongerFits(row.kind, { ...request, merchantEmail });
        if (misfit) return this.outdated(row, attempt, misfit);
        to = recipientNow(row, merchantEmail);
        message = await this.build({ ...row, to }, facts);
      } catch (e) {
        if (!(e instanceof UnbuildableMessage)) throw e; // a failed read: retried, however long
        return this.unbuildable(row, attempt, e);
      }
      // Started before the claim, so the deadline ends at least one send timeout before the lease does.
      const deadline = AbortSignal.timeout(this.config.notifySendTimeoutMs * SEND_DEADLINE_TIMEOUTS);
      // The lease starts at the claim, after this: ending the record's tries here keeps them inside it.
      const leaseEnds = performance.now() + this.config.notifySendTimeoutMs * LEASE_TIMEOUTS;
      const claim = await this.claimIfStill(row, attempt, to, deadline);
      if (claim.kind === 'taken') return; // another run of the same attempt got there first
      if (claim.kind === 'misfit') return this.outdated(row, attempt, claim.why);
      if (claim.kind === 'claimed') return this.sendAndRecord(row, attempt, message, deadline, leaseEnds);
      // The merchant's email changed since it was read: the message is built again for the new address.
      if (read >= MAX_READS) throw new Error(`notification ${id}: its request or the merchant's email changed at each of ${MAX_READS} reads; the job is retried`);
    }
  }

  /**
   * Takes attempt n only while what the message was decided on still holds. In the claim's transaction the
   * request and (for a merchant's note) the merchant are read again FOR SHARE: a payment, a lost claim or a
   * new merchant email that committed since the first read is seen here (the message is abandoned unsent, or
   * built again for the new address), and one committing later waits for the claim, so it comes after the
   * send began. Without this a note went to an address the merchant had removed moments before, and a charge
   * notice went out for a charge just paid (with the claim held back by a lock).
   */
  private async claimIfStill(row: StoredNotification, attempt: number, to: string, deadline: AbortSignal): Promise<ClaimOutcome> {
    const token = randomUUID();
    return this.dataSource.transaction<ClaimOutcome>(async (em) => {
      // A row another transaction holds for long (an operator's open UPDATE) must not hold this worker's place
      // and connection with it: past the timeout the job fails, unspent, and is retried.
      await em.query(`SET LOCAL lock_timeout = ${CLAIM_LOCK_TIMEOUT_MS}`);
      const request = await this.requests.notifiedRequest(row.requestId, em);
      // Deleted since the first read: the next read finds it gone and says so.
      if (!request) return { kind: 'changed' };
      const merchantEmail = row.kind === 'merchant_note' ? ((await this.merchants.contactOf(request.merchantId, em, true))?.email ?? null) : null;
      const why = noLongerFits(row.kind, { ...request, merchantEmail });
      if (why) return { kind: 'misfit', why };
      if (recipientNow(row, merchantEmail) !== to) return { kind: 'changed' };
      const claimed = await this.repo.claim(row.id, attempt, this.config.notifySendTimeoutMs * LEASE_TIMEOUTS, token, to, em);
      return { kind: claimed ? 'claimed' : 'taken' };
    }).catch(async (e: unknown): Promise<ClaimOutcome> => {
      if (isLockTimeout(e)) {
        throw new Error(`notification ${row.id}: its request or merchant was held by another transaction for over ${CLAIM_LOCK_TIMEOUT_MS} ms; attempt ${attempt} not taken, retried`);
      }
      // The COMMIT may have gone through with its answer lost (the connection cut then, or closed by the pool's
      // query bound). Then the attempt is this run's, and only this run can send it: a retried job finds it
      // taken, and the re-drive would fail it in doubt once the lease ends, never sent.
      if (await this.claimSurvived(row.id, attempt, token, deadline)) {
        this.logger.warn(`notification ${row.id}: attempt ${attempt}'s claim committed though its answer was lost (${(e as Error).message}); sending`);
        return { kind: 'claimed' };
      }
      throw e;
    });
  }

  /**
   * Whether the claim made with `token` holds: read again while Postgres does not answer, with the record's
   * backoff, until the send's deadline (a send started later would be cut short anyway, and retried).
   */
  private async claimSurvived(id: string, attempt: number, token: string, deadline: AbortSignal): Promise<boolean> {
    for (let wait = RECORD_RETRY_FIRST_MS; ; wait = Math.min(wait * 2, RECORD_RETRY_MAX_MS)) {
      if (deadline.aborted) return false; // a send started now would be cut at once
      try {
        return await this.repo.claimedBy(id, attempt, token);
      } catch (e) {
        if (deadline.aborted) return false;
        this.logger.warn(`notification ${id}: cannot tell yet whether attempt ${attempt}'s claim committed (${(e as Error).message}); asking again in ${wait} ms`);
        await sleep(wait, undefined, { signal: deadline }).catch(() => undefined);
      }
    }
  }

  /** Sends the claimed attempt within its deadline, stores the outcome and schedules the next attempt. */
  private async sendAndRecord(row: StoredNotification, attempt: number, message: Built, deadline: AbortSignal, leaseEnds: number): Promise<void> {
    const id = row.id;
    const result = await this.send(message, deadline, async () => {
      // Stored before the first byte reaches the server: a worker dying before this mark handed nothing over,
      // and the re-drive tries the message again instead of failing it in doubt (a crash hunt).
      if (!(await this.repo.markHandedOver(id, attempt))) throw new Error(`attempt ${attempt} no longer holds its lease; not sent`);
    });
    const step = nextStep(result, attempt, Date.now() - retriesSince(row).getTime(), {
      baseMs: this.config.notifyRetryBaseMs,
      maxMs: this.config.notifyRetryMaxMs,
      giveUpMs: this.config.notifyGiveUpMs,
    });
    const delayMs = step.outcome === 'retry' ? step.delayMs : 0;
    const recorded = await this.recordOutcome(
      {
        id,
        attempt,
        outcome: step.outcome,
        error: result.kind === 'sent' ? null : result.error,
        response: result.kind === 'sent' ? result.response : null,
        delayMs,
      },
      leaseEnds,
    );
    if (!recorded) {
      this.logger.error(`notification ${id}: attempt ${attempt} ended (${result.kind}) but its lease was no longer held (the re-drive declared it in doubt, or an earlier try to record it committed unanswered); left as it is`);
      return;
    }
    this.metrics.countNotificationAttempt(row.channel, step.outcome);
    if (step.outcome === 'retry') await this.queue.scheduleRetry({ id, attempt: attempt + 1 }, delayMs);
    else if (step.outcome !== 'sent') this.logger.warn(`notification ${id} (${row.kind} by ${row.channel}) ${step.outcome} after attempt ${attempt}`);
  }

  /**
   * Stores a send's outcome, trying again while Postgres does not answer (a restart, a failover), until the
   * lease ends (`leaseEnds` on the monotonic clock). Only this run knows the outcome: unrecorded, the re-drive would fail the message in doubt, so
   * a receipt the server refused would never be retried and one it took would read failed (a Postgres-outage
   * hunt: a one-second outage lost both). Storing it twice is harmless: the record needs the lease it releases.
   */
  private async recordOutcome(r: AttemptResult, leaseEnds: number): Promise<boolean> {
    for (let wait = RECORD_RETRY_FIRST_MS; ; wait = Math.min(wait * 2, RECORD_RETRY_MAX_MS)) {
      try {
        return await this.repo.record(r);
      } catch (e) {
        if (performance.now() + wait >= leaseEnds) throw e;
        this.logger.warn(`notification ${r.id}: attempt ${r.attempt}'s outcome (${r.outcome}) not stored yet (${(e as Error).message}); trying again in ${wait} ms`);
        await sleep(wait);
      }
    }
  }

  /** Retried (the job fails) until the message is NOTIFY_GIVE_UP_MS old (or resent that long ago), then abandoned with the reason. */
  private async unbuildable(row: StoredNotification, attempt: number, e: UnbuildableMessage): Promise<void> {
    const error = `not sent: the message cannot be built: ${e.message}`;
    if (Date.now() - retriesSince(row).getTime() < this.config.notifyGiveUpMs) {
      await this.repo.noteUnsent(row.id, attempt, error);
      throw e;
    }
    if (!(await this.repo.abandonUnsent(row.id, attempt, error))) return; // another run of the attempt decided it
    this.metrics.countUnbuildableNotification(row.kind, row.channel);
    this.logger.error(`notification ${row.id} (${row.kind} by ${row.channel} for request ${row.requestId}) abandoned: ${error}`);
  }

  /** Abandoned unsent, with the reason: the message would tell its recipient something no longer true. */
  private async outdated(row: StoredNotification, attempt: number, why: string): Promise<void> {
    if (!(await this.repo.abandonUnsent(row.id, attempt, `not sent: ${why}`))) return; // another run of the attempt decided it
    this.metrics.countNotificationAttempt(row.channel, 'abandoned');
    this.logger.warn(`notification ${row.id} (${row.kind} by ${row.channel} for request ${row.requestId}) abandoned unsent: ${why}`);
  }

  /** Only reads fail for a reason that passes by itself; rendering and composing what was read fail alike every time. */
  private async build(row: StoredNotification, facts: MessageFacts): Promise<Built> {
    try {
      return await this.render(row, facts);
    } catch (e) {
      throw new UnbuildableMessage((e as Error).message);
    }
  }

  private async render(row: StoredNotification, facts: MessageFacts): Promise<Built> {
    switch (row.channel) {
      case 'email':
        // Refused before anything else: no worker could ever send it, so none retries it.
        if (!isOneEmailAddress(row.to)) return { channel: 'refused', error: 'the recipient is not one email address' };
        if (!this.mailer) return { channel: 'off', error: 'email is off on this worker (no SMTP_URL)' };
        return { channel: 'email', email: await this.mailer.compose({ ...renderEmail(facts), to: row.to, messageId: row.messageId }) };
      case 'sms':
        if (!this.sms) return { channel: 'off', error: 'SMS is off on this worker (SMS_* unset)' };
        return { channel: 'sms', sms: { to: row.to, body: renderSms(facts), messageId: row.messageId } };
    }
  }

  private async send(m: Built, deadline: AbortSignal, handOver: () => Promise<void>): Promise<SendResult> {
    switch (m.channel) {
      case 'email':
        return this.mailer!.send(m.email, deadline, handOver);
      case 'sms':
        try {
          await handOver();
        } catch (e) {
          return { kind: 'transient', error: `not sent: ${(e as Error).message}` };
        }
        return this.sms!.send(m.sms, deadline);
      case 'off':
        return { kind: 'transient', error: m.error };
      case 'refused':
        return { kind: 'refused', error: m.error };
    }
  }

  private async factsOf(row: StoredNotification): Promise<{ facts: MessageFacts; request: NotifiedRequest; merchantEmail: string | null }> {
    const r = await this.requests.notifiedRequest(row.requestId);
    // The outbox row references its request (foreign key), so a request not found was deleted: no later read finds it.
    if (!r) throw new UnbuildableMessage(`request ${row.requestId} not found`);
    const merchant = await this.merchants.contactOf(r.merchantId);
    const token = await this.assets.storedAsset(r.chainId, r.tokenAddress);
    const facts: MessageFacts = {
      kind: row.kind,
      requestId: r.requestId,
      testMode: r.testMode,
      merchantName: merchant?.name ?? null,
      fiatAmount: r.fiatAmount,
      fiatCurrency: r.fiatCurrency,
      amount: r.amount,
      token,
      txHash: r.txHash,
      txUrl: txUrl(r.chainId, r.txHash),
      verifiedAt: r.proofVerifiedAt,
      payPageUrl: `${this.config.payUrl}/${r.requestId}`,
      dueAt: row.dueAt,
      expiresAt: r.expiresAt,
    };
    return { facts, request: r, merchantEmail: merchant?.email ?? null };
  }
}
