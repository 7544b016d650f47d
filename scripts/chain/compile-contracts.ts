import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { JsonFragment } from 'ethers';

export interface ContractArtifact {
  abi: JsonFragment[];
  bytecode: string;
}

interface CachedSource {
  /** Covers the source, the compiler package version and the settings: any change recompiles. */
  cacheKey: string;
  solcVersion: string;
  contracts: Record<string, ContractArtifact>;
}

const ROOT = path.resolve(__dirname, '..', '..');
// Hardhat 2.29 defaults to osaka; 'shanghai' (PUSH0) is accepted by it and by any live EVM chain today.
const EVM_VERSION = 'shanghai';

/** TestToken's ABI and bytecode. */
export function loadTokenArtifact(): ContractArtifact {
  return loadArtifact('TestToken.sol', 'TestToken');
}

/**
 * A contract of contracts/<file>: ABI and creation bytecode, compiled with the bundled solc-js (offline) only
 * when the source, the compiler or the settings changed; cached in artifacts/<file>.json.
 */
export function loadArtifact(file: string, contract: string): ContractArtifact {
  const source = readFileSync(path.join(ROOT, 'contracts', file), 'utf8');
  const solcPackage: string = require('solc/package.json').version;
  const cacheKey = createHash('sha256').update(`${solcPackage}\n${EVM_VERSION}\n${source}`).digest('hex');
  const cachePath = path.join(ROOT, 'artifacts', `${path.basename(file, '.sol')}.json`);
  let compiled = readCache(cachePath);
  if (!compiled || compiled.cacheKey !== cacheKey) {
    compiled = compile(file, source, cacheKey);
    writeCache(cachePath, compiled);
  }
  const artifact = compiled.contracts[contract];
  if (!artifact) throw new Error(`contracts/${file} has no contract ${contract}`);
  return artifact;
}

function readCache(cachePath: string): CachedSource | null {
  try {
    const cached = JSON.parse(readFileSync(cachePath, 'utf8')) as Partial<CachedSource>;
    return cached.contracts ? (cached as CachedSource) : null; // an older single-contract cache: recompile
  } catch {
    return null;
  }
}

function writeCache(cachePath: string, compiled: CachedSource): void {
  mkdirSync(path.dirname(cachePath), { recursive: true });
  // Write-then-rename so a parallel jest worker never reads a half-written file.
  const tmp = `${cachePath}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(compiled, null, 2));
  renameSync(tmp, cachePath);
}

function compile(file: string, source: string, cacheKey: string): CachedSource {
  // Loaded lazily: soljson is a large wasm-in-js blob that takes a while to initialise.
  const solc: typeof import('solc') = require('solc');
  const input = {
    language: 'Solidity',
    sources: { [file]: { content: source } },
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = ((output.errors ?? []) as { severity: string; formattedMessage: string }[]).filter(
    (e) => e.severity === 'error',
  );
  if (errors.length > 0) {
    throw new Error(`${file} failed to compile:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  }
  const contracts: Record<string, ContractArtifact> = {};
  for (const [name, c] of Object.entries(output.contracts[file] as Record<string, { abi: JsonFragment[]; evm: { bytecode: { object: string } } }>)) {
    contracts[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  }
  return { cacheKey, solcVersion: solc.version(), contracts };
}
