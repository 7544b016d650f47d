import { isSealed, SecretBox } from '../../src/common/crypto/secret-box';
import { testConfig } from './app';

/**
 * Webhook secrets as stored (sealed under the test service's SECRET_KEY, bound to the partner id), for tests
 * that write a webhook_endpoints row directly or check what a row holds.
 */
function box(env: Record<string, string> = {}): SecretBox {
  const c = testConfig(env);
  return new SecretBox(c.secretKey, c.secretKeyPrevious ?? undefined);
}

export function sealSecret(partnerId: string, secret: string, env: Record<string, string> = {}): string {
  return box(env).seal(secret, partnerId);
}

/** The secret a stored value holds; fails unless the value is sealed (never plaintext at rest). */
export function openStoredSecret(partnerId: string, stored: string, env: Record<string, string> = {}): string {
  if (!isSealed(stored)) throw new Error(`stored webhook secret is not sealed: ${stored.slice(0, 12)}…`);
  return box(env).open(stored, partnerId);
}
