import 'reflect-metadata';
import { GUARDS_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { MerchantsController } from '../merchants/merchants.controller';
import { RequestsController } from '../requests/http/requests.controller';
import { RATE_LIMIT_PER_MINUTE } from '../../common/rate-limit/rate-limit';
import { PartnerApiGuard } from './partner-api.guard';

/**
 * PartnerApiGuard counts each call against its handler's @RateLimit (else its controller's) and refuses a
 * handler with neither (500 on every call): every route of every controller it guards must have one. Listed
 * here, so a new route or controller is checked when it is added.
 */
describe('routes behind PartnerApiGuard', () => {
  const guarded = [RequestsController, MerchantsController];

  it.each(guarded.map((c) => [c.name, c] as const))('%s is guarded by PartnerApiGuard and every route has @RateLimit', (_name, controller) => {
    expect(Reflect.getMetadata(GUARDS_METADATA, controller)).toContain(PartnerApiGuard);
    const routes = Object.getOwnPropertyNames(controller.prototype)
      .filter((m) => m !== 'constructor')
      .map((m) => (controller.prototype as unknown as Record<string, object>)[m])
      .filter((handler) => Reflect.getMetadata(METHOD_METADATA, handler) !== undefined);
    expect(routes.length).toBeGreaterThan(0);
    const limit = (handler: object) => Reflect.getMetadata(RATE_LIMIT_PER_MINUTE, handler) ?? Reflect.getMetadata(RATE_LIMIT_PER_MINUTE, controller);
    const missing = routes.filter((handler) => typeof limit(handler) !== 'number');
    expect(missing.map((h) => (h as { name: string }).name)).toEqual([]);
  });
});
