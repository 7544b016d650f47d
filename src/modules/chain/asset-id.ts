/** CAIP-19 id of an ERC-20 token on an EVM chain, as partners see it (`asset_id`). */
export function assetId(chainId: bigint, token: string): string {
  return `eip155:${chainId}/erc20:${token}`;
}

/** An `asset_id` as requests show it: `eip155:<chain id>/erc20:<token address>`. */
export const ASSET_ID_RE = /^eip155:([1-9][0-9]{0,19})\/erc20:(0x[0-9a-fA-F]{40})$/;

/** The largest chain id the assets table (bigint) holds: a larger one names no stored asset (nor may be configured). */
export const MAX_CHAIN_ID = 2n ** 63n - 1n;

/**
 * The chain and token an `asset_id` names (addresses lower-case, as configured and stored); null when it is
 * not one, or names a chain id no asset can have.
 */
export function parseAssetId(id: string): { chainId: bigint; token: string } | null {
  const m = ASSET_ID_RE.exec(id);
  if (!m || BigInt(m[1]) > MAX_CHAIN_ID) return null;
  return { chainId: BigInt(m[1]), token: m[2].toLowerCase() };
}
