import type { ValueTransformer } from 'typeorm';

/**
 * numeric(78,0) and bigint columns as JS bigint (STYLE rule 3: never a JS number for token units). pg returns
 * both as strings, so nothing is lost between the database and the transformer.
 */
export const bigintColumn: ValueTransformer = {
  to: (v: bigint | null | undefined) => (v === null || v === undefined ? v : v.toString()),
  from: (v: string | null) => (v === null ? null : BigInt(v)),
};
