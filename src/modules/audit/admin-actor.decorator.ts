import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { Actor } from './audit';

/**
 * The operator behind an admin API call: the token is shared, so only the client address tells them apart. It
 * is the TCP peer, never req.ip: TRUST_PROXY is set for the public listener's load balancer, and on the admin
 * port it would let the caller write any X-Forwarded-For into the trail.
 */
export const AdminActor = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): Actor => ({ kind: 'admin', address: ctx.switchToHttp().getRequest<Request>().socket.remoteAddress ?? null }),
);
