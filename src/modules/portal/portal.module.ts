import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PartnersModule } from '../partners/partners.module';
import { AuditCoreModule } from '../audit/audit-core.module';
import { AuthModule } from '../auth/auth.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { PagesModule } from '../pages/pages.module';
import { PortalAuthController } from './portal-auth.controller';
import { PortalAuthService } from './portal-auth.service';
import { PortalErrorFilter } from './portal-error.filter';
import { PortalRenderer } from './portal-renderer';
import { PortalSessionEntity } from './portal-session.entity';
import { PortalSessionGuard } from './portal-session.guard';
import { PortalSessionRepository } from './portal-session.repository';
import { PortalSessionsService } from './portal-sessions.service';
import { PortalUserEntity } from './portal-user.entity';
import { PortalUserRepository } from './portal-user.repository';
import { PortalUsersAdminController } from './portal-users-admin.controller';
import { PortalUsersService } from './portal-users.service';
import { PortalController } from './portal.controller';
import { PortalService } from './portal.service';

/**
 * The partner portal (HTTP role, public port; the admin listener 404s /portal): partner users and their
 * sessions, and server-rendered pages over the services operators use. Its users are created through the
 * admin API, which this module also serves.
 */
@Module({
  imports: [TypeOrmModule.forFeature([PortalUserEntity, PortalSessionEntity]), PartnersModule, AuthModule, MerchantsModule, PagesModule, AuditCoreModule],
  // PortalAuthController first: PortalController ends with a catch-all under /portal.
  controllers: [PortalAuthController, PortalController, PortalUsersAdminController],
  providers: [
    PortalUserRepository,
    PortalSessionRepository,
    PortalUsersService,
    PortalSessionsService,
    PortalAuthService,
    PortalService,
    PortalRenderer,
    PortalSessionGuard,
    PortalErrorFilter,
  ],
})
export class PortalModule {}
