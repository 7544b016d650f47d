import { getAddress } from 'ethers';

export interface SiweFields {
  domain: string;
  address: string;
  statement: string;
  uri: string;
  chainId: bigint;
  nonce: string;
  issuedAt: Date;
  expirationTime: Date;
}

/**
 * The EIP-4361 message text, field for field as the standard lays it out (the `siwe` package would pull
 * all of ethers into the bundle for this one string). The address must be EIP-55 checksummed.
 */
export function siweMessage(f: SiweFields): string {
  return [
    `${f.domain} wants you to sign in with your Ethereum account:`,
    getAddress(f.address),
    '',
    f.statement,
    '',
    `URI: ${f.uri}`,
    'Version: 1',
    `Chain ID: ${f.chainId}`,
    `Nonce: ${f.nonce}`,
    `Issued At: ${f.issuedAt.toISOString()}`,
    `Expiration Time: ${f.expirationTime.toISOString()}`,
  ].join('\n');
}
