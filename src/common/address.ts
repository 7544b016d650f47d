/** An EVM address as accepted on input: 0x and 40 hex digits in either case (stored lower case). */
export const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;

export const ZERO_ADDRESS = `0x${'0'.repeat(40)}`;

/**
 * The zero address: no key can sign for it, and a signature check that recovers an address from garbage gets
 * exactly it (ecrecover's failure value), so it is never anyone's wallet.
 */
export function isZeroAddress(address: string): boolean {
  return /^0x0{40}$/i.test(address);
}
