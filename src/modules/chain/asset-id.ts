/** CAIP-19 id of an ERC-20 token on an EVM chain, as partners see it (`asset_id`). */
export function assetId(chainId: bigint, token: string): string {
  return `eip155:${chainId}/erc20:${token}`;
}
