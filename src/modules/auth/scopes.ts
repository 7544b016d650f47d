import { SetMetadata } from '@nestjs/common';

export const SCOPES = ['requests:read', 'requests:write', 'merchants:read', 'merchants:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const REQUIRED_SCOPE = 'required_scope';
/** The scope an endpoint needs (spec §4); enforced by PartnerApiGuard. */
export const RequireScope = (scope: Scope) => SetMetadata(REQUIRED_SCOPE, scope);
