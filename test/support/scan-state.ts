import { randomBytes } from 'node:crypto';
import { rpc as nodeRpc } from '../../scripts/chain/local-node';
import { sql } from './db';
import { waitFor } from './wait';

/** What the chain scan left in the database, polled there: polling the API would run into its rate limit. */
export const proofOf = async (id: string) =>
  (await sql<{ proof_status: string; tx_hash: string | null; proof_source: string | null }>(
    `SELECT proof_status, tx_hash, proof_source FROM payment_requests WHERE id = $1`, [id]))[0];

export const eventsOf = async (id: string) =>
  (await sql<{ event: string }>(`SELECT event FROM webhook_events WHERE request_id = $1 ORDER BY recorded_at`, [id])).map((e) => e.event);

/** Every row the scan keeps of a transaction, with its schedule. */
export const keptOf = (txHash: string) =>
  sql<{ log_index: number; reason: string; pending_request_id: string | null; retries: number }>(
    `SELECT log_index, reason, pending_request_id, retries FROM unmatched_transfers WHERE tx_hash = $1 ORDER BY log_index`, [txHash]);

/**
 * Resolves once a whole scan of `token` ran over the node's current tip (its cursor reached the block
 * `confirmations` deep), so anything it retries was retried after now.
 */
export async function scannedThroughTip(nodeUrl: string, token: string, confirmations: number): Promise<void> {
  const safe = Number(await nodeRpc<string>(nodeUrl, 'eth_blockNumber')) - confirmations + 1;
  await waitFor(async () => {
    const [row] = await sql<{ last_block: string }>(`SELECT last_block FROM chain_cursors WHERE token_address = $1`, [token.toLowerCase()]);
    return row !== undefined && Number(row.last_block) >= safe;
  });
}

/**
 * `count` transfers the node does not know (dropped), kept undecided for the request `r` of `to`'s wallet
 * in `token` on `nodeUrl`'s chain, due at once: as the scan keeps them, without a chain to find them on.
 */
export async function holdUnknownTransfers(
  nodeUrl: string, token: string, from: string, to: string, r: { id: string; amount: bigint }, count: number,
): Promise<void> {
  const chainId = BigInt(await nodeRpc<string>(nodeUrl, 'eth_chainId')).toString();
  await sql(
    `INSERT INTO unmatched_transfers
            (chain_id, tx_hash, log_index, block_number, token_address, from_address, to_address, value, reason, pending_request_id)
     SELECT $1, h, 0, 1, $2, $3, $4, $5, 'unconfirmed_unknown', $6 FROM unnest($7::text[]) h`,
    [chainId, token.toLowerCase(), from.toLowerCase(), to.toLowerCase(), r.amount.toString(), r.id,
      Array.from({ length: count }, () => `0x${randomBytes(32).toString('hex')}`)],
  );
}
