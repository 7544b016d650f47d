import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { MerchantRepository } from './merchant.repository';
import { shownName } from '../../common/names';

/** How messages name a merchant and where its own notes go (DESIGN §6, §8). */
export interface MerchantContact {
  /** display_name, else business_name; null when the merchant has neither. */
  name: string | null;
  email: string | null;
}

/** The narrow read notifications need of a merchant; merchants stays the only reader of its table. */
@Injectable()
export class MerchantContacts {
  constructor(private readonly repo: MerchantRepository) {}

  /** With `share`, read FOR SHARE in em's transaction: a change of the merchant's email waits for it. */
  async contactOf(merchantId: string, em?: EntityManager, share = false): Promise<MerchantContact | null> {
    const m = await this.repo.findContact(merchantId, em, share);
    return m ? { name: shownName(m.displayName, m.businessName), email: m.email } : null;
  }
}
