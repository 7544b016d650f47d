import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ChainScanService } from './application/chain-scan.service';
import { ChainCursorEntity } from './infrastructure/chain-cursor.entity';
import { ChainCursorsRepository } from './infrastructure/chain-cursors.repository';
import { ExpiryProcessor } from './infrastructure/expiry.processor';
import { HeadWatcher } from './infrastructure/head-watcher';
import { ScheduledProcessor } from './infrastructure/scheduled.processor';
import { UnmatchedTransferEntity } from './infrastructure/unmatched-transfer.entity';
import { UnmatchedTransfersRepository } from './infrastructure/unmatched-transfers.repository';
import { VerificationProcessor } from './infrastructure/verification.processor';
import { RequestFactsModule } from './request-facts.module';
import { RequestsCoreModule } from './requests-core.module';

/** Verification, expiry, chain scan and sweep (worker role); chain_cursors and unmatched_transfers are the scan's. */
@Module({
  imports: [TypeOrmModule.forFeature([ChainCursorEntity, UnmatchedTransferEntity]), RequestsCoreModule, RequestFactsModule],
  providers: [
    ChainCursorsRepository,
    UnmatchedTransfersRepository,
    ChainScanService,
    HeadWatcher,
    VerificationProcessor,
    ExpiryProcessor,
    ScheduledProcessor,
  ],
  exports: [ChainScanService],
})
export class RequestsWorkerModule {}
