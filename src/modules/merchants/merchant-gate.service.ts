import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { MerchantForCreate } from './merchant-directory';
import { MerchantEntity } from './merchant.entity';
import { shownName } from '../../common/names';

/**
 * What other modules may learn of a merchant, for the two reads they make (requests: create and the pay
 * page). Reads merchants through TypeORM only; the merchants module stays the owner of the table.
 */
@Injectable()
export class MerchantGate {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The merchant as it stands now, never from a cache: create decides on this read and inserts right after,
   * so a merchant disabled, re-walleted or changed before the create began cannot get a request (the same
   * guarantee as the former merchant condition inside the INSERT, whose snapshot also preceded the insert).
   * On em's connection when given: a plan's charge reads it inside its transaction, which may hold the
   * merchant's amount lock (RequestsRepository.insertOrFind), so it must not wait for a second connection
   * that creates queued behind that lock may hold.
   */
  async currentForCreate(merchantId: string, em: EntityManager = this.dataSource.manager): Promise<MerchantForCreate | null> {
    const m = await em.getRepository(MerchantEntity).findOne({
      select: { id: true, partnerId: true, testMode: true, onboardingStatus: true, disabled: true, displayCurrency: true, walletAddress: true },
      where: { id: merchantId },
    });
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
    return shownName(m?.displayName, m?.businessName);
  }
}
