import { Injectable } from '@nestjs/common';
import { AssetStore } from '../pages/asset-store';
import { portalDocument, type PortalShell } from './portal-layout.view';

/** Portal pages on the pages' shared stylesheet (AssetStore's content-hashed URL). */
@Injectable()
export class PortalRenderer {
  constructor(private readonly assets: AssetStore) {}

  page(shell: Omit<PortalShell, 'baseStylesheet'>): string {
    return portalDocument({ ...shell, baseStylesheet: this.assets.url('pages.css') });
  }
}
