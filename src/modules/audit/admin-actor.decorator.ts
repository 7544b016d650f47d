import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { Actor } from './audit';

/** The operator behind an admin API call: the token is shared, so only the client address tells them apart. */
export const AdminActor = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): Actor => ({ kind: 'admin', address: ctx.switchToHttp().getRequest<Request>().ip ?? null }),
);
