import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AlertsCoreModule } from '../alerts/alerts-core.module';
import { ChainScanService } from './application/chain-scan.service';
import { FinalityService } from './application/finality.service';
import { ClaimFinalityRepository } from './infrastructure/claim-finality.repository';
import { FinalityProcessor } from './infrastructure/finality.processor';
import { ChainCursorEntity } from './infrastructure/chain-cursor.entity';
import { ChainCursorsRepository } from './infrastructure/chain-cursors.repository';
import { ExpiryProcessor } from './infrastructure/expiry.processor';
import { HeadWatcher } from './infrastructure/head-watcher';
import { PaymentRequestEntity } from './infrastructure/payment-request.entity';
import { ScheduledProcessor } from './infrastructure/scheduled.processor';
import { UnmatchedTransferEntity } from './infrastructure/unmatched-transfer.entity';
import { UnmatchedTransfersRepository } from './infrastructure/unmatched-transfers.repository';
import { VerificationProcessor } from './infrastructure/verification.processor';
import { RequestFactsModule } from './request-facts.module';
import { RequestsCoreModule } from './requests-core.module';

/**
 * Verification, expiry, chain scan, sweep and the finality re-read (worker role); chain_cursors and
 * unmatched_transfers are the scan's.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([ChainCursorEntity, UnmatchedTransferEntity, PaymentRequestEntity]),
    RequestsCoreModule,
    RequestFactsModule,
    AlertsCoreModule,
  ],
  providers: [
    ChainCursorsRepository,
    UnmatchedTransfersRepository,
    ChainScanService,
    HeadWatcher,
    VerificationProcessor,
    ExpiryProcessor,
    ScheduledProcessor,
    ClaimFinalityRepository,
    FinalityService,
    FinalityProcessor,
  ],
  exports: [ChainScanService],
})
export class RequestsWorkerModule {}
