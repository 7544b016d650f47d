import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PartnerEntity } from './partner.entity';
import { PartnerRepository } from './partner.repository';
import { PartnersService } from './partners.service';

/**
 * The owner of the partners table, with no dependency on other feature modules, so auth, merchants, portal
 * and the admin API can all read partners through PartnersService without an import cycle.
 */
@Module({
  imports: [TypeOrmModule.forFeature([PartnerEntity])],
  providers: [PartnerRepository, PartnersService],
  exports: [PartnersService],
})
export class PartnersModule {}
