import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MerchantContacts } from './merchant-contacts.service';
import { MerchantEntity } from './merchant.entity';
import { MerchantRepository } from './merchant.repository';

/**
 * MerchantContacts alone, for both roles: notifications (mounted in the worker too) reads a merchant's
 * name and email without pulling in the merchants HTTP module (its controllers, partners, auth).
 */
@Module({
  imports: [TypeOrmModule.forFeature([MerchantEntity])],
  providers: [MerchantRepository, MerchantContacts],
  exports: [MerchantContacts],
})
export class MerchantContactsModule {}
