import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditCoreModule } from '../audit/audit-core.module';
import { PartnerEntity } from './partner.entity';
import { PartnerRepository } from './partner.repository';
import { PartnersService } from './partners.service';

/**
 * The owner of the partners table, with no dependency on other feature modules, so auth, merchants, portal
 * and the admin API can all read partners through PartnersService without an import cycle.
 */
@Module({
  imports: [TypeOrmModule.forFeature([PartnerEntity]), AuditCoreModule],
  providers: [PartnerRepository, PartnersService],
  exports: [PartnersService],
})
export class PartnersModule {}
