import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { BUNDLE_ENTRIES, loadBundles, sha256, type BundleName } from './bundle';

export interface Asset {
  body: Buffer;
  contentType: string;
  /** Content hash; page URLs carry it, so a new build is never served from a stale cache. */
  version: string;
}

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

/** The pages' script and style bundles, held in memory; loaded (or built) once at start. */
@Injectable()
export class AssetStore implements OnModuleInit {
  private readonly logger = new Logger('Pages');
  private readonly assets = new Map<string, Asset>();

  async onModuleInit(): Promise<void> {
    const bundles = await loadBundles((why) => this.logger.log(`built page bundles at start: ${why}`));
    for (const [name, body] of Object.entries(bundles.files)) {
      this.assets.set(name, { body, contentType: TYPES[name.split('.').pop()!], version: sha256(body).slice(0, 16) });
    }
  }

  get(name: string): Asset | undefined {
    return Object.hasOwn(BUNDLE_ENTRIES, name) ? this.assets.get(name) : undefined;
  }

  url(name: BundleName): string {
    return `/assets/${name}?v=${this.assets.get(name)!.version}`;
  }
}
