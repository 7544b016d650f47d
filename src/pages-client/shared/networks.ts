/**
 * What the pages say about a chain, and what a wallet needs to add it (EIP-3085 wallet_addEthereumChain).
 * Shared by the server (names on the page) and the browser bundles (switching the wallet).
 */
export interface Network {
  name: string;
  rpcUrls: string[];
  nativeCurrency: { name: string; symbol: string; decimals: number };
  explorer?: string;
}

const ETH = { name: 'Ether', symbol: 'ETH', decimals: 18 };

export const NETWORKS: Readonly<Record<string, Network>> = {
  '1': { name: 'Ethereum', rpcUrls: ['https://ethereum-rpc.publicnode.com'], nativeCurrency: ETH, explorer: 'https://etherscan.io' },
  '10': { name: 'OP Mainnet', rpcUrls: ['https://mainnet.optimism.io'], nativeCurrency: ETH, explorer: 'https://optimistic.etherscan.io' },
  '137': {
    name: 'Polygon',
    rpcUrls: ['https://polygon-rpc.com'],
    nativeCurrency: { name: 'POL', symbol: 'POL', decimals: 18 },
    explorer: 'https://polygonscan.com',
  },
  '8453': { name: 'Base', rpcUrls: ['https://mainnet.base.org'], nativeCurrency: ETH, explorer: 'https://basescan.org' },
  '42161': { name: 'Arbitrum One', rpcUrls: ['https://arb1.arbitrum.io/rpc'], nativeCurrency: ETH, explorer: 'https://arbiscan.io' },
  '84532': { name: 'Base Sepolia', rpcUrls: ['https://sepolia.base.org'], nativeCurrency: ETH, explorer: 'https://sepolia.basescan.org' },
  '11155111': { name: 'Sepolia', rpcUrls: ['https://ethereum-sepolia-rpc.publicnode.com'], nativeCurrency: ETH, explorer: 'https://sepolia.etherscan.io' },
  '31337': { name: 'Local test chain', rpcUrls: ['http://127.0.0.1:8545'], nativeCurrency: ETH },
};

/** "Base (chain 8453)"; an unknown chain is named by its id alone. */
export function networkLabel(chainId: string): string {
  const n = NETWORKS[chainId];
  return n ? `${n.name} (chain ${chainId})` : `chain ${chainId}`;
}
