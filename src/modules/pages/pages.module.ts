import { Module } from '@nestjs/common';
import { MerchantsModule } from '../merchants/merchants.module';
import { PlansModule } from '../plans/plans.module';
import { RequestsModule } from '../requests/requests.module';
import { AssetsController } from './assets.controller';
import { AssetStore } from './asset-store';
import { DashboardPagesController } from './dashboard-pages.controller';
import { PagesController } from './pages.controller';

/** The pay page, the onboarding page, the terms, the merchant dashboard's pages, the handle page, the payer's plan page and their bundles (HTTP role, public port). */
@Module({
  imports: [RequestsModule, MerchantsModule, PlansModule],
  controllers: [PagesController, DashboardPagesController, AssetsController],
  providers: [AssetStore],
  exports: [AssetStore],
})
export class PagesModule {}
