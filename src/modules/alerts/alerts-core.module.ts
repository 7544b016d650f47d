import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AlertEntity } from './alert.entity';
import { AlertsRepository } from './alerts.repository';
import { AlertsService } from './alerts.service';

/** The alerts table and the service that records and lists it; imported by both roles (no controller here). */
@Module({
  imports: [TypeOrmModule.forFeature([AlertEntity])],
  providers: [AlertsRepository, AlertsService],
  exports: [AlertsService],
})
export class AlertsCoreModule {}
