import 'reflect-metadata';
import { type ArgumentsHost, Logger, type LoggerService } from '@nestjs/common';
import { PortalErrorFilter } from '../portal/portal-error.filter';
import type { PortalRenderer } from '../portal/portal-renderer';
import type { AssetStore } from './asset-store';
import { PageErrorFilter } from './page-error.filter';

/**
 * A line logged while serving a page or portal request carries the request's id as a field of its own:
 * there is no per-request log context (it turned on the process's promise hooks; see
 * src/modules/ops/logging.ts), so the filters pass it.
 */
describe('page and portal error filters log the request id', () => {
  const lines: unknown[][] = [];
  const capture: LoggerService = {
    log: () => undefined,
    warn: () => undefined,
    error: (...args: unknown[]) => void lines.push(args),
  };

  beforeAll(() => Logger.overrideLogger(capture));
  afterAll(() => Logger.overrideLogger(true));
  beforeEach(() => (lines.length = 0));

  const host = (req: object, res: object) =>
    ({ switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }) }) as unknown as ArgumentsHost;
  const fakeRes = () => {
    const res = { headersSent: false, setHeader: () => res, status: () => res, send: () => res };
    return res;
  };
  const req = { id: 'req-1234', method: 'GET', path: '/pay/x' };

  it('PageErrorFilter', () => {
    const assets = { url: (f: string) => `/assets/${f}` } as unknown as AssetStore;
    new PageErrorFilter(assets).catch(new Error('boom'), host(req, fakeRes()));
    expect(lines).toHaveLength(1);
    expect(lines[0][0]).toMatchObject({ reqId: 'req-1234', err: expect.any(Error) });
    expect(String(lines[0][1])).toContain('req-1234');
  });

  it('PortalErrorFilter', () => {
    const renderer = { page: () => '<html></html>' } as unknown as PortalRenderer;
    new PortalErrorFilter(renderer).catch(new Error('boom'), host({ ...req, path: '/portal' }, fakeRes()));
    expect(lines).toHaveLength(1);
    expect(lines[0][0]).toMatchObject({ reqId: 'req-1234', err: expect.any(Error) });
  });
});
