import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppError } from '../../common/errors';
import { AssetStore } from './asset-store';
import { html, pageDocument } from './html';
import { setPageHeaders } from './page-security';

interface ErrorWords {
  title: string;
  detail: string;
}

/** What a person reading the page needs to hear; the partner API's codes mean nothing to them. */
function words(status: number, path: string): ErrorWords {
  if (status === 404) {
    if (path.startsWith('/onboarding')) {
      return { title: 'This link was already used or is unknown', detail: 'Ask for a new onboarding link if you still need to set up payments.' };
    }
    if (path.startsWith('/terms')) return { title: 'Terms not found', detail: 'There are no terms with this version.' };
    if (path.startsWith('/dashboard')) return { title: 'Page not found', detail: 'Go back to your dashboard and follow a link from there.' };
    if (path.startsWith('/m/')) return { title: 'No merchant at this address', detail: 'Check the link, or ask the merchant for their payment page.' };
    return { title: 'Payment request not found', detail: 'Check the link, or ask the merchant for a new one.' };
  }
  if (status === 410 && path.startsWith('/onboarding')) {
    return {
      title: 'This onboarding link has expired',
      detail: 'Onboarding links work for a limited time. Ask the partner who sent you this link for a new one; nothing you set up so far is lost.',
    };
  }
  if (status === 429) return { title: 'Too many requests', detail: 'Please wait a minute and reload the page.' };
  return { title: 'Something went wrong', detail: 'Please reload the page in a moment.' };
}

/**
 * The pages' errors as HTML pages with the same status code and security headers (the API's JSON filter
 * stays in charge of everything else). Unexpected errors are logged with the request id, as in the API.
 */
@Catch()
export class PageErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Pages');

  constructor(private readonly assets: AssetStore) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<Request & { id?: string }>();
    let status = 500;
    if (exception instanceof AppError) status = exception.status;
    else if (exception instanceof HttpException) status = exception.getStatus();
    if (status >= 500) {
      // The request id as a field of its own, like every line logged while serving a request (no log context).
      this.logger.error(
        { reqId: req.id, err: exception },
        `request ${req.id ?? '-'} ${req.method} ${req.path} failed: ${(exception as Error)?.message ?? String(exception)}`,
      );
    }
    if (res.headersSent) return;
    const { title, detail } = words(status, req.path.toLowerCase());
    setPageHeaders(res);
    res.status(status).send(
      pageDocument({
        title,
        stylesheet: this.assets.url('pages.css'),
        body: html`<main id="error-page" data-status="${status}">
<section class="card">
<h1>${title}</h1>
<p>${detail}</p>
${status >= 500 && req.id ? html`<p class="hint">Reference: <code>${req.id}</code></p>` : ''}
</section>
</main>`,
      }),
    );
  }
}
