import { randomBytes } from 'node:crypto';
import type { TestService } from '../support/app';
import { call, type Reply } from '../support/http';

/** A valid idempotency key: 48 base64url characters. */
export function idemKey(): string {
  return randomBytes(36).toString('base64url');
}

export function createRequest(svc: TestService, key: string, body: unknown): Promise<Reply> {
  return call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, body });
}

/** Creates a request and throws unless it was created (201). */
export async function mustCreateRequest(svc: TestService, key: string, body: Record<string, unknown>): Promise<any> {
  const r = await createRequest(svc, key, body);
  if (r.status !== 201) throw new Error(`request create failed: ${r.status} ${r.text}`);
  return r.body;
}
