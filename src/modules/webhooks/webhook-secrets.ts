import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { isSealed, SecretBox } from '../../common/crypto/secret-box';
import { WebhookEndpointsRepository, type StoredSecrets } from './webhook-endpoints.repository';

/**
 * A stored webhook secret that does not open: sealed under a key this process does not hold (SECRET_KEY
 * changed without SECRET_KEY_PREVIOUS, or that was removed before `npm run secrets:reseal`), or altered.
 * Nothing can be signed with it; rotating the secret replaces it (WebhookSettingsService.rotate).
 */
export class SecretUnavailable extends Error {
  constructor(readonly partnerId: string, cause: Error) {
    super(`the webhook secret of partner ${partnerId} does not open: ${cause.message}`);
  }
}

/** Partners whose opened secrets a process keeps; past this many the one opened longest ago goes first. */
const OPENED_MAX = 10_000;

/**
 * Webhook signing secrets at rest (DESIGN §7): webhook_endpoints.secret and previous_secret hold SecretBox
 * values (AES-256-GCM under SECRET_KEY, bound to the partner id), never the secret itself, so a backup or a
 * read of the table cannot sign a webhook. Sealed on every write, opened by every reader (delivery, the
 * portal's test ping). During a key rotation values sealed under SECRET_KEY_PREVIOUS still open, and each is
 * sealed again under SECRET_KEY when seen, or all at once by `npm run secrets:reseal`.
 */
@Injectable()
export class WebhookSecrets {
  private readonly box: SecretBox;
  /**
   * Partner → its stored (sealed) values and their secrets, for values sealed under SECRET_KEY: a delivery
   * opens its partner's secrets on every attempt, and one AES-GCM open each was a measurable part of the
   * worker's time. Served only while the stored values are exactly these, so a new or rotated secret is never
   * answered from here, and replaced when they change, so a retired secret does not stay in memory. Stale
   * values are not kept, so each is still sealed again when seen.
   */
  private readonly opened = new Map<string, { values: string[]; secrets: string[] }>();

  constructor(
    @Inject(APP_CONFIG) config: Pick<AppConfig, 'secretKey' | 'secretKeyPrevious'>,
    private readonly endpoints: WebhookEndpointsRepository,
  ) {
    this.box = new SecretBox(config.secretKey, config.secretKeyPrevious ?? undefined);
  }

  seal(partnerId: string, secret: string): string {
    return this.box.seal(secret, partnerId);
  }

  /**
   * A stored value to carry over: as it is, or sealed again under SECRET_KEY if stale (a value never sealed,
   * written by a version before sealing, is the secret itself: sealed). Throws SecretUnavailable when a sealed
   * value does not open.
   */
  carry(partnerId: string, stored: string): string {
    if (!this.box.isStale(stored)) return stored;
    return this.seal(partnerId, isSealed(stored) ? this.openOne(partnerId, stored) : stored);
  }

  /**
   * For a rotation's previous_secret: carry, and a sealed value that does not open here kept as it is, never
   * dropped: this process may be the one that lacks a key (an instance on the old SECRET_KEY during a rolling
   * key rotation), and the rest of the fleet may still sign with it.
   */
  carryKept(partnerId: string, stored: string): string {
    try {
      return this.carry(partnerId, stored);
    } catch (e) {
      if (e instanceof SecretUnavailable) return stored;
      throw e;
    }
  }

  /**
   * The secrets a delivery is signed with, in the clear: [current] or, during an unconfirmed rotation,
   * [new, old]. Throws SecretUnavailable when a value does not open (sealed under a key not configured, or
   * altered): nothing is signed with a wrong key. Values found sealed under the
   * previous key are sealed again, unless the row changed meanwhile.
   */
  async open(partnerId: string, stored: StoredSecrets): Promise<string[]> {
    const values = [stored.secret, stored.previousSecret].filter((s): s is string => !!s);
    const known = this.opened.get(partnerId);
    if (known && known.values.length === values.length && known.values.every((v, i) => v === values[i])) return known.secrets;
    const secrets = values.map((v) => this.openOne(partnerId, v));
    this.opened.delete(partnerId);
    if (values.some((v) => this.box.isStale(v))) {
      await this.reseal(partnerId, stored);
    } else {
      if (this.opened.size >= OPENED_MAX) this.opened.delete(this.opened.keys().next().value!);
      this.opened.set(partnerId, { values, secrets });
    }
    return secrets;
  }

  /**
   * Seals every stored secret under SECRET_KEY (the last step of a key rotation, before SECRET_KEY_PREVIOUS
   * is removed). Returns how many rows were sealed again; throws on the first value that does not open.
   */
  async resealAll(batch = 500): Promise<number> {
    let resealed = 0;
    let after = '';
    for (;;) {
      const rows = await this.endpoints.withSecrets(after, batch);
      for (const row of rows) {
        if ([row.secret, row.previousSecret].some((v) => v && this.box.isStale(v)) && (await this.reseal(row.partnerId, row))) resealed++;
      }
      if (rows.length < batch) return resealed;
      after = rows[rows.length - 1].partnerId;
    }
  }

  private openOne(partnerId: string, stored: string): string {
    try {
      return this.box.open(stored, partnerId);
    } catch (e) {
      throw new SecretUnavailable(partnerId, e as Error);
    }
  }

  private reseal(partnerId: string, stored: StoredSecrets): Promise<boolean> {
    const again = (v: string | null) => (v === null ? null : this.carry(partnerId, v));
    return this.endpoints.replaceSecrets(partnerId, stored, { secret: again(stored.secret), previousSecret: again(stored.previousSecret) });
  }
}
