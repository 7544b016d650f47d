import { Module } from '@nestjs/common';
import { DocsController } from './docs.controller';

/** GET /api/v1/openapi.json and /docs, on both listeners (HTTP role). */
@Module({ controllers: [DocsController] })
export class DocsModule {}
