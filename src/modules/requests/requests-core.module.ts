import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AfterCommit } from './application/after-commit';
import { ExpiryService } from './application/expiry.service';
import { RequestFactsService } from './application/request-facts.service';
import { VerificationService } from './application/verification.service';
import { ExpiryQueue } from './infrastructure/expiry.queue';
import { PaymentRequestEntity } from './infrastructure/payment-request.entity';
import { RequestsRepository } from './infrastructure/requests.repository';
import { VerificationQueue } from './infrastructure/verification.queue';

/**
 * What both roles of the requests module share, registered once: payment_requests (entity and
 * repository), the queue producers, after-commit work, verification, expiry and the facts webhooks read.
 * PlanChargeOutcomesPort, which verification and expiry call, is provided globally by the plans module.
 * Imported by RequestsModule (HTTP), RequestsWorkerModule and RequestFactsModule only.
 */
@Module({
  imports: [TypeOrmModule.forFeature([PaymentRequestEntity])],
  providers: [RequestsRepository, VerificationQueue, ExpiryQueue, AfterCommit, VerificationService, RequestFactsService, ExpiryService],
  exports: [RequestsRepository, VerificationQueue, AfterCommit, VerificationService, RequestFactsService, ExpiryService],
})
export class RequestsCoreModule {}
