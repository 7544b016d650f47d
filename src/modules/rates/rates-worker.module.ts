import { Module } from '@nestjs/common';
import { RatesProcessor } from './rates.processor';

/** The rates refresh job (worker role). */
@Module({ providers: [RatesProcessor] })
export class RatesWorkerModule {}
