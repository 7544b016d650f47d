import { Wallet } from 'ethers';
import { deployToken, findFreePort, mint, startLocalNode, type LocalNode } from '../../scripts/chain/local-node';

/**
 * Two real nodes for a node that changes chain under the service: `a` on 31337 (the configured chain id) and
 * `b` on 31338, the token deployed at the same address on both (same deployer, same nonce) and `payer`'s
 * balance minted on both, so the same transfer can be made on either.
 */
export async function startTwoChains(payerKey: string): Promise<{ a: LocalNode; b: LocalNode; token: string }> {
  const [a, b] = await Promise.all([
    startLocalNode({ port: await findFreePort() }),
    startLocalNode({ port: await findFreePort(), chainId: 31338 }),
  ]);
  const token = await deployToken(a.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  const other = await deployToken(b.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  if (other !== token) throw new Error(`the token is at ${token} on ${a.url} and at ${other} on ${b.url}`);
  const payer = new Wallet(payerKey).address;
  await mint(a.url, token, payer, 10n ** 15n);
  await mint(b.url, token, payer, 10n ** 15n);
  return { a, b, token };
}
