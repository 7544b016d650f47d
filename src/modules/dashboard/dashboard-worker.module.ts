import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DashboardNonceEntity } from './dashboard-nonce.entity';
import { DashboardNonceRepository } from './dashboard-nonce.repository';
import { DashboardSessionEntity } from './dashboard-session.entity';
import { DashboardSessionRepository } from './dashboard-session.repository';
import { DashboardSweepProcessor } from './dashboard-sweep.processor';

/** The worker's part of the dashboard module: the sweep of its own tables (dashboard_sessions, dashboard_nonces). */
@Module({
  imports: [TypeOrmModule.forFeature([DashboardNonceEntity, DashboardSessionEntity])],
  providers: [DashboardNonceRepository, DashboardSessionRepository, DashboardSweepProcessor],
})
export class DashboardWorkerModule {}
