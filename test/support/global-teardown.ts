import type { LocalNode } from '../../scripts/chain/local-node';

export default async function globalTeardown(): Promise<void> {
  await Promise.all(((globalThis as { __chainNodes?: LocalNode[] }).__chainNodes ?? []).map((node) => node.stop()));
}
