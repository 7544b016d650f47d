import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { JsonFragment } from 'ethers';

export interface TokenArtifact {
  abi: JsonFragment[];
  bytecode: string;
}

interface CachedArtifact extends TokenArtifact {
  /** Covers the source, the compiler package version and the settings: any change recompiles. */
  cacheKey: string;
  solcVersion: string;
}

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCE_PATH = path.join(ROOT, 'contracts', 'TestToken.sol');
const ARTIFACT_PATH = path.join(ROOT, 'artifacts', 'TestToken.json');
// Hardhat 2.29 defaults to osaka; 'shanghai' (PUSH0) is accepted by it and by any live EVM chain today.
const EVM_VERSION = 'shanghai';

/** TestToken's ABI and bytecode; compiles with the bundled solc-js only when source, compiler or settings changed. */
export function loadTokenArtifact(): TokenArtifact {
  const source = readFileSync(SOURCE_PATH, 'utf8');
  const solcPackage: string = require('solc/package.json').version;
  const cacheKey = createHash('sha256').update(`${solcPackage}\n${EVM_VERSION}\n${source}`).digest('hex');
  const cached = readCache();
  if (cached && cached.cacheKey === cacheKey) return { abi: cached.abi, bytecode: cached.bytecode };
  const artifact = compile(source, cacheKey);
  writeCache(artifact);
  return { abi: artifact.abi, bytecode: artifact.bytecode };
}

function readCache(): CachedArtifact | null {
  try {
    return JSON.parse(readFileSync(ARTIFACT_PATH, 'utf8')) as CachedArtifact;
  } catch {
    return null;
  }
}

function writeCache(artifact: CachedArtifact): void {
  mkdirSync(path.dirname(ARTIFACT_PATH), { recursive: true });
  // Write-then-rename so a parallel jest worker never reads a half-written file.
  const tmp = `${ARTIFACT_PATH}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(artifact, null, 2));
  renameSync(tmp, ARTIFACT_PATH);
}

function compile(source: string, cacheKey: string): CachedArtifact {
  // Loaded lazily: soljson is a large wasm-in-js blob that takes a while to initialise.
  const solc: typeof import('solc') = require('solc');
  const input = {
    language: 'Solidity',
    sources: { 'TestToken.sol': { content: source } },
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { TestToken: ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = ((output.errors ?? []) as { severity: string; formattedMessage: string }[]).filter(
    (e) => e.severity === 'error',
  );
  if (errors.length > 0) {
    throw new Error(`TestToken.sol failed to compile:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  }
  const contract = output.contracts['TestToken.sol'].TestToken;
  return {
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
    cacheKey,
    solcVersion: solc.version(),
  };
}
