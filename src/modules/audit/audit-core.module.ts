import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEventEntity } from './audit-event.entity';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';

/**
 * The audit_events table and the service that records and lists it. No dependency on feature modules, so
 * partners, auth, merchants, webhooks, rates and portal can all record in their own transactions.
 */
@Module({
  imports: [TypeOrmModule.forFeature([AuditEventEntity])],
  providers: [AuditRepository, AuditService],
  exports: [AuditService],
})
export class AuditCoreModule {}
