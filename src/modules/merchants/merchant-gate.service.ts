import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { MerchantForCreate } from './merchant-directory';
import { MerchantEntity } from './merchant.entity';

/**
 * What other modules may learn of a merchant, for the two reads they make (requests: create and the pay
 * page). Reads merchants through TypeORM only; the merchants module stays the owner of the table.
 */
@Injectable()
export class MerchantGate {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The merchant as it stands, read in the caller's transaction with FOR SHARE: a change to it (disable,
   * wallet, currency, onboarding) waits until that transaction ends, so what create checks here still holds
   * when its request commits, whatever a cache said before.
   */
  async lockForCreate(em: EntityManager, merchantId: string): Promise<MerchantForCreate | null> {
    const m = await em
      .getRepository(MerchantEntity)
      .createQueryBuilder('m')
      .select(['m.id', 'm.partnerId', 'm.testMode', 'm.onboardingStatus', 'm.disabled', 'm.displayCurrency', 'm.walletAddress'])
      .where('m.id = :merchantId', { merchantId })
      .setLock('pessimistic_read')
      .getOne();
    return m
      ? {
          id: m.id,
          partner_id: m.partnerId,
          test_mode: m.testMode,
          onboarding_status: m.onboardingStatus,
          disabled: m.disabled,
          display_currency: m.displayCurrency,
          wallet_address: m.walletAddress,
        }
      : null;
  }

  /** The name a payer sees for the merchant: display name, else business name. */
  async payeeName(merchantId: string): Promise<string | null> {
    const m = await this.dataSource.getRepository(MerchantEntity).findOne({
      select: { id: true, displayName: true, businessName: true },
      where: { id: merchantId },
    });
    return m?.displayName ?? m?.businessName ?? null;
  }
}
