import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { AfterCommit } from './application/after-commit';
import { ChainScanService } from './application/chain-scan.service';
import { PayService } from './application/pay.service';
import { RequestsService } from './application/requests.service';
import { VerificationService } from './application/verification.service';
import { PayController } from './http/pay.controller';
import { RequestsController } from './http/requests.controller';
import { HeadWatcher } from './infrastructure/head-watcher';
import { ExpiryProcessor, ScheduledProcessor, VerificationProcessor } from './infrastructure/requests.processors';
import { RequestsRepository } from './infrastructure/requests.repository';

const core = [RequestsRepository, AfterCommit, VerificationService];

/** The partner API and pay API on payment requests (HTTP role). */
@Module({
  imports: [AuthModule, MerchantsModule],
  controllers: [RequestsController, PayController],
  providers: [...core, RequestsService, PayService],
  exports: [RequestsService, PayService],
})
export class RequestsModule {}

/** Verification, expiry, chain scan and sweep (worker role). */
@Module({
  providers: [...core, ChainScanService, HeadWatcher, VerificationProcessor, ExpiryProcessor, ScheduledProcessor],
  exports: [ChainScanService, VerificationService],
})
export class RequestsWorkerModule {}
