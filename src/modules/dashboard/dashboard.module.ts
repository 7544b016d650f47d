import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RedisLeases } from '../../common/redis/redis-lease';
import { PartnersModule } from '../partners/partners.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { RequestsModule } from '../requests/requests.module';
import { CsvExports } from './csv-export';
import { DashboardAuthController } from './dashboard-auth.controller';
import { DashboardAuthService } from './dashboard-auth.service';
import { DashboardNonceEntity } from './dashboard-nonce.entity';
import { DashboardNonceRepository } from './dashboard-nonce.repository';
import { DashboardSessionEntity } from './dashboard-session.entity';
import { DashboardSessionGuard } from './dashboard-session.guard';
import { DashboardSessionRepository } from './dashboard-session.repository';
import { DashboardController } from './dashboard.controller';
import { DashboardService } from './dashboard.service';
import { HandlePageController } from './handle-page.controller';
import { HandlePageService } from './handle-page.service';

/**
 * The merchant's side (DESIGN §5; HTTP role, public listener): Sign-In with Ethereum and sessions (it owns
 * dashboard_nonces and dashboard_sessions), the dashboard API, and the public handle page's API. Exports the
 * session guard (with its service) and DashboardService, so other signed-in dashboard routes reuse them.
 */
@Module({
  imports: [TypeOrmModule.forFeature([DashboardNonceEntity, DashboardSessionEntity]), PartnersModule, MerchantsModule, RequestsModule],
  controllers: [DashboardAuthController, DashboardController, HandlePageController],
  providers: [CsvExports, RedisLeases, DashboardNonceRepository, DashboardSessionRepository, DashboardAuthService, DashboardSessionGuard, DashboardService, HandlePageService],
  exports: [DashboardAuthService, DashboardSessionGuard, DashboardService],
})
export class DashboardModule {}
