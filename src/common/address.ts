/** An EVM address as accepted on input: 0x and 40 hex digits in either case (stored lower case). */
export const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;
