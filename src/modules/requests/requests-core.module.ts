import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AfterCommit } from './application/after-commit';
import { RequestFactsService } from './application/request-facts.service';
import { VerificationService } from './application/verification.service';
import { ExpiryQueue } from './infrastructure/expiry.queue';
import { PaymentRequestEntity } from './infrastructure/payment-request.entity';
import { RequestsRepository } from './infrastructure/requests.repository';
import { VerificationQueue } from './infrastructure/verification.queue';

/**
 * What both roles of the requests module share, registered once: payment_requests (entity and
 * repository), the queue producers, after-commit work, verification and the facts webhooks read.
 * Imported by RequestsModule (HTTP), RequestsWorkerModule and RequestFactsModule only.
 */
@Module({
  imports: [TypeOrmModule.forFeature([PaymentRequestEntity])],
  providers: [RequestsRepository, VerificationQueue, ExpiryQueue, AfterCommit, VerificationService, RequestFactsService],
  exports: [RequestsRepository, AfterCommit, VerificationService, RequestFactsService],
})
export class RequestsCoreModule {}
