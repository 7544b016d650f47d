import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, Header, Inject, Param, Res } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { Response } from 'express';
import { AppError } from '../../common/errors';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { buildOpenApi } from './openapi';

/** Only self-hosted scripts and styles (swagger-ui-dist, no CDN, no inline script). */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Partner API v1 — Payment Request Service</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<noscript><p>The machine-readable description is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</p></noscript>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/docs-init.js"></script>
</body>
</html>
`;

// The page's own script: a file, so the CSP needs no 'unsafe-inline'.
const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    defaultModelsExpandDepth: 1,
    tryItOutEnabled: false,
    validatorUrl: null,
  });
});
`;

interface Asset {
  type: string;
  body: Buffer;
}

function swaggerUiDir(): string {
  return dirname(require.resolve('swagger-ui-dist/package.json'));
}

/** The partner API's OpenAPI document and a docs page rendering it (both listeners). */
@Controller()
export class DocsController {
  private readonly document: OpenAPIObject;
  private readonly json: string;
  private assets: Map<string, Asset> | null = null;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.document = buildOpenApi({
      publicUrl: config.publicUrl,
      keyPrefix: config.keyPrefix,
      webhooks: { delaysMs: config.webhookRetryDelaysMs, maxAttempts: config.webhookMaxAttempts, timeoutMs: config.webhookTimeoutMs },
    });
    this.json = JSON.stringify(this.document);
  }

  @Get('api/v1/openapi.json')
  @Header('content-type', 'application/json; charset=utf-8')
  @Header('cache-control', 'no-cache')
  @Header('access-control-allow-origin', '*')
  openapi(): string {
    return this.json;
  }

  @Get('docs')
  docs(@Res() res: Response): void {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(PAGE);
  }

  @Get('docs/assets/:file')
  asset(@Param('file') file: string, @Res() res: Response): void {
    const a = this.loadAssets().get(file);
    if (!a) throw AppError.notFound();
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type(a.type).send(a.body);
  }

  /** Read on first use (the bundle is ~1.5 MB), from a fixed list: nothing else on disk is reachable. */
  private loadAssets(): Map<string, Asset> {
    if (this.assets) return this.assets;
    const dir = swaggerUiDir();
    const files: Array<[string, string]> = [
      ['swagger-ui.css', 'text/css; charset=utf-8'],
      ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
      ['favicon-32x32.png', 'image/png'],
      ['favicon-16x16.png', 'image/png'],
    ];
    const assets = new Map<string, Asset>(files.map(([name, type]) => [name, { type, body: readFileSync(join(dir, name)) }]));
    assets.set('docs-init.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(INIT) });
    this.assets = assets;
    return assets;
  }
}
