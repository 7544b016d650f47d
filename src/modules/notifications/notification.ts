import { isOneEmailAddress } from '../../common/email-address';
import { doubling } from '../../common/time';

/** Notifications (DESIGN §6): what is sent, to whom, and the rule that decides what follows an attempt. */
export const NOTIFICATION_KINDS = ['receipt', 'charge_notice', 'merchant_note'] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

export const NOTIFICATION_CHANNELS = ['email', 'sms'] as const;
export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[number];

export const NOTIFICATION_STATUSES = ['pending', 'sent', 'failed', 'abandoned'] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

/** 'sending' until the outcome is recorded; 'in_doubt' when its worker vanished in between. */
export type AttemptOutcome = 'sending' | 'sent' | 'retry' | 'failed' | 'abandoned' | 'in_doubt';

/** A message to write to the outbox. */
export interface NewNotification {
  kind: NotificationKind;
  channel: NotificationChannel;
  to: string;
  requestId: string;
  planId?: string | null;
  periodIndex?: number | null;
  dueAt?: Date | null;
}

/** An outbox message as stored: what the repository answers (never its entity). */
export interface StoredNotification {
  id: string;
  kind: NotificationKind;
  channel: NotificationChannel;
  to: string;
  requestId: string;
  planId: string | null;
  periodIndex: number | null;
  dueAt: Date | null;
  status: NotificationStatus;
  messageId: string;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  sentAt: Date | null;
  createdAt: Date;
  /** When an operator last sent it again; null until then. */
  resentAt: Date | null;
}

/** Which channels are on (SMTP_URL set; all four SMS_* set). */
export interface Channels {
  email: boolean;
  sms: boolean;
}

/**
 * The messages a verified request causes: a receipt to the customer by email and by SMS, and a note to the
 * merchant. A message exists only when its channel is configured and it has a recipient. The partner API takes
 * any customer_email of at most 254 characters (spec §4.1), and the mailer would read "a@x, b@y" or
 * "a@x\r\nBcc: c@z" as other recipients than the one shown: such a receipt is still written, so the merchant's
 * dashboard shows it, and the sender refuses it (failed, "the recipient is not one email address") without
 * mailing anyone. Merchant emails are checked where they are set (one plain address); one stored before that
 * check is written all the same and refused the same way, never skipped unseen. The merchant's note goes to
 * the merchant's email as it is at each attempt (recipientNow): `to` is the latest address, and each attempt
 * row keeps its own.
 */
export function messagesForVerified(
  on: Channels,
  r: { requestId: string; customerEmail: string | null; customerPhone: string | null; merchantEmail: string | null },
): NewNotification[] {
  const out: NewNotification[] = [];
  if (on.email && r.customerEmail) out.push({ kind: 'receipt', channel: 'email', to: r.customerEmail, requestId: r.requestId });
  if (on.sms && r.customerPhone) out.push({ kind: 'receipt', channel: 'sms', to: r.customerPhone, requestId: r.requestId });
  if (on.email && r.merchantEmail) out.push({ kind: 'merchant_note', channel: 'email', to: r.merchantEmail, requestId: r.requestId });
  return out;
}

/**
 * Whom an attempt sends the message to. A merchant's note goes to the merchant's email as it is now: a merchant
 * that changed it while the note was retried gets it at the new address (the old one may be a former
 * employee's; one that removed it gets none: noLongerFits). The others keep the address their request or plan
 * gave, which nobody changes afterwards.
 */
export function recipientNow(n: { kind: NotificationKind; to: string }, merchantEmail: string | null): string {
  return n.kind === 'merchant_note' && merchantEmail !== null ? merchantEmail : n.to;
}

/** A plan's charge was created: a notice to the payer by email (DESIGN §6), when email is on and there is a payer email. */
export function messagesForCharge(
  on: Channels,
  c: { requestId: string; planId: string; periodIndex: number; payerEmail: string | null; dueAt: Date },
): NewNotification[] {
  if (!on.email || !c.payerEmail || !isOneEmailAddress(c.payerEmail)) return [];
  return [{ kind: 'charge_notice', channel: 'email', to: c.payerEmail, requestId: c.requestId, planId: c.planId, periodIndex: c.periodIndex, dueAt: c.dueAt }];
}

/** What one send ended with, as the transport saw it. */
export type SendResult =
  | { kind: 'sent'; response: string | null }
  /** Refused for good (SMTP 5xx, an SMS 4xx other than 429, an address the transport cannot use). */
  | { kind: 'refused'; error: string }
  /** Worth another try (SMTP 4xx, SMS 429, 503 and other 5xx, connection refused, timeouts before it went out). */
  | { kind: 'transient'; error: string }
  /**
   * Failed or cut off after the message was handed over and before the server's final answer (late, lost, or
   * past the send's deadline), or an SMS answered 500, 502 or 504 (the provider, or a gateway that forwarded
   * it, failed while handling it): it may have arrived. Never resent (at most once), as for a worker that
   * died mid-send.
   */
  | { kind: 'in_doubt'; error: string };

export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  giveUpMs: number;
}

export type NextStep =
  | { outcome: 'sent' }
  | { outcome: 'failed' }
  | { outcome: 'abandoned' }
  | { outcome: 'in_doubt' }
  | { outcome: 'retry'; delayMs: number };

/**
 * After attempt n: sent, refused and in doubt end the message (in doubt is never resent: at most once). A
 * transient failure waits with exponential back-off (base × 2^(n-1), capped at max); a message whose next
 * attempt would fall later than giveUp after it was written (or resent: retriesSince) is abandoned instead
 * (24 hours by default).
 */
export function nextStep(result: SendResult, attempt: number, ageMs: number, p: RetryPolicy): NextStep {
  switch (result.kind) {
    case 'sent':
      return { outcome: 'sent' };
    case 'refused':
      return { outcome: 'failed' };
    case 'in_doubt':
      return { outcome: 'in_doubt' };
    case 'transient': {
      const delayMs = doubling(p.baseMs, p.maxMs, attempt - 1);
      return ageMs + delayMs > p.giveUpMs ? { outcome: 'abandoned' } : { outcome: 'retry', delayMs };
    }
  }
}

/**
 * Where a message's give-up age starts: its creation, or an operator's latest resend, so a resend gets
 * NOTIFY_GIVE_UP_MS (24 hours by default) of retries of its own. The back-off goes on from the attempt
 * number (capped at NOTIFY_RETRY_MAX_MS), which a resend does not reset.
 */
export function retriesSince(n: Pick<StoredNotification, 'createdAt' | 'resentAt'>): Date {
  return n.resentAt ?? n.createdAt;
}

/**
 * Why an operator may not send a message again, or null when they may. Only a message that did not go out
 * (failed, abandoned) is sent again; a pending one is still being sent, and a sent one went out (at most
 * once). One whose last attempt ended in doubt may have arrived: it is sent again only when the operator
 * accepts a possible duplicate (the one exception to DESIGN §6's at most once, made on purpose). And the
 * message must still fit its request as it is now: a receipt or a merchant's note only while the request is
 * verified and its claim stands (finality loses a claim whose transfer a reorg took away, and the request
 * stays verified: DESIGN §7), a charge notice only while the charge waits for a payment (not paid, none
 * attached, not voided, not lapsed), or the payer would read a second charge. The repository's reopen then
 * changes it only while it is at the attempt and status this judged: once failed or abandoned, that
 * attempt's outcome is final.
 */
export function resendRefusal(
  n: { kind: NotificationKind; status: NotificationStatus; lastOutcome: AttemptOutcome | null },
  request: FitFacts,
  allowDuplicate: boolean,
): string | null {
  switch (n.status) {
    case 'pending':
      return 'the message is still being sent';
    case 'sent':
      return 'the message was sent';
    case 'failed':
    case 'abandoned':
      if (n.lastOutcome === 'in_doubt' && !allowDuplicate) {
        return 'its last attempt may have reached the recipient: send it again with allow_duplicate: true to accept a possible duplicate';
      }
      return noLongerFits(n.kind, request);
  }
}

/** What a message must still fit: its request as it is now, and for a merchant's note the merchant's email now. */
export interface FitFacts {
  status: string;
  proofStatus: string;
  claimLost: boolean;
  merchantEmail: string | null;
}

/**
 * Why a message no longer fits its request as it is now, or null when it does: the sender's check before each
 * attempt (a charge paid while its notice was being retried is not asked for again) and the resend's.
 */
export function noLongerFits(kind: NotificationKind, request: FitFacts): string | null {
  switch (kind) {
    case 'charge_notice':
      if (request.proofStatus === 'verified') return 'the charge is paid: a notice now would read as a second charge';
      if (request.proofStatus === 'attached') return 'a payment of the charge is being verified: a notice now would read as a second charge';
      return request.status === 'requested' || request.status === 'opened' ? null : `the charge can no longer be paid (${request.status})`;
    case 'receipt':
    case 'merchant_note':
      if (request.proofStatus !== 'verified') return `the request is not verified (proof ${request.proofStatus}): nothing to confirm`;
      if (request.claimLost) return 'the payment was lost to a reorg (see GET /admin/api/alerts): nothing to confirm';
      return kind === 'merchant_note' && request.merchantEmail === null ? 'the merchant has no email address any more' : null;
  }
}

/** The stable Message-ID of a notification: derived from its row id, on the sender's domain. */
export function messageIdFor(id: string, mailFrom: string | null, publicUrl: string): string {
  const fromDomain = mailFrom ? /@([^\s>]+)>?\s*$/.exec(mailFrom)?.[1] : undefined;
  return `<${id}@${fromDomain ?? new URL(publicUrl).hostname}>`;
}
