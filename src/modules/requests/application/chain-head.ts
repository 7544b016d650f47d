import type { Confirmations } from '../../../config/config';
import type { ChainReader } from '../../chain/chain-reader';
import type { ChainHead } from '../domain/finality';

/** Reads what a depth rule needs: the tip always, the finalized block only when the rule is `finalized`. */
export async function readHead(reader: ChainReader, required: Confirmations): Promise<ChainHead> {
  if (required !== 'finalized') return { tip: await reader.tip(), finalized: null };
  const [tip, finalized] = await Promise.all([reader.tip(), reader.finalizedBlock()]);
  return { tip, finalized: finalized?.number ?? null };
}
