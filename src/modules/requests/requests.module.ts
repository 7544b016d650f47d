import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { RatesModule } from '../rates/rates.module';
import { RequestsService } from './application/requests.service';
import { RequestsController } from './http/requests.controller';
import { RequestsRepository } from './infrastructure/requests.repository';

@Module({
  imports: [AuthModule, RatesModule],
  controllers: [RequestsController],
  providers: [RequestsService, RequestsRepository],
  exports: [RequestsService],
})
export class RequestsModule {}
