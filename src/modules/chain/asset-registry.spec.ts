import { Logger } from '@nestjs/common';
import type { AppConfig } from '../../config/config';
import { AssetRegistry } from './asset-registry';
import type { AssetRepository } from './asset.repository';
import type { ChainReader } from './chain-reader';

/**
 * The mode's state as the node's chain id answers come and go (8062e1d re-checks it while running). Only the
 * configured id turns a mode on, only another id turns it off: an error says nothing of the chain.
 */
const CONFIGURED = 31337n;

/** A node whose eth_chainId answers `answer` (an Error: it fails), each call after `hold` if one is set. */
function node() {
  const n = {
    answer: CONFIGURED as bigint | Error,
    hold: null as Promise<void> | null,
    reader: {
      chainId: async () => {
        const a = n.answer;
        if (n.hold) await n.hold;
        if (a instanceof Error) throw a;
        return a;
      },
      tokenInfo: async () => ({ symbol: 'TUSD', decimals: 6 }),
    } as unknown as ChainReader,
  };
  return n;
}

async function started(n: ReturnType<typeof node>): Promise<AssetRegistry> {
  const config = { chains: { test: { rpcUrl: 'http://127.0.0.1:1', chainId: CONFIGURED, tokenAddress: `0x${'11'.repeat(20)}`, confirmations: 1 } } } as unknown as AppConfig;
  const repo = { save: async () => undefined, find: async () => ({ symbol: 'TUSD', decimals: 6 }) } as unknown as AssetRepository;
  const registry = new AssetRegistry(config, () => n.reader, repo);
  await registry.onModuleInit();
  registry.onApplicationShutdown(); // the 10 s timer: the test calls refresh itself
  return registry;
}

const on = (r: AssetRegistry) => ({ state: r.status('test').state, asset: r.asset('test') !== null, reader: r.reader('test') !== null });

beforeAll(() => Logger.overrideLogger(false));

it('a node on another chain that then fails to answer keeps the mode off; the configured id turns it on again', async () => {
  const n = node();
  const registry = await started(n);
  n.answer = 31338n;
  await registry.refresh('test');
  expect(on(registry)).toEqual({ state: 'chain_id_mismatch', asset: false, reader: false });
  n.answer = new Error('socket hang up');
  await registry.refresh('test');
  // It was unreachable with the stored asset, so requests were created again for a node last seen on another chain.
  expect(on(registry)).toEqual({ state: 'chain_id_mismatch', asset: false, reader: false });
  n.answer = CONFIGURED;
  await registry.refresh('test');
  expect(on(registry)).toEqual({ state: 'ok', asset: true, reader: true });
  // An error while on: nothing changes (readers and health report a node that does not answer).
  n.answer = new Error('socket hang up');
  await registry.refresh('test');
  expect(on(registry)).toEqual({ state: 'ok', asset: true, reader: true });
});
