import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { AppError } from '../../common/errors';
import { AssetStore } from './asset-store';

/** The pages' bundles from memory. A URL with the current content hash may be cached for good. */
@Controller('assets')
export class AssetsController {
  constructor(private readonly assets: AssetStore) {}

  @Get(':name')
  serve(@Param('name') name: string, @Query('v') version: string | undefined, @Res() res: Response): void {
    const asset = this.assets.get(name);
    if (!asset) throw AppError.notFound();
    res.setHeader('Content-Type', asset.contentType);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', version === asset.version ? 'public, max-age=31536000, immutable' : 'no-cache');
    res.send(asset.body);
  }
}
