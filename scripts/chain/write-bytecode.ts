import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadArtifact } from './compile-contracts';

/** Writes the ERC-6492 validator's creation code into src/ (the service runs without solc). */
const bytecode = loadArtifact('UniversalSigValidator.sol', 'ValidateSigOffchain').bytecode;
const lines = (bytecode.match(/.{1,120}/g) ?? []).map((l) => `  '${l}'`).join(' +\n');
writeFileSync(
  path.join(__dirname, '..', '..', 'src', 'modules', 'chain', 'validate-sig-offchain.bytecode.ts'),
  '// Generated from contracts/UniversalSigValidator.sol (ValidateSigOffchain, solc-js, shanghai, optimizer 200 runs)\n' +
    '// by scripts/chain/compile-contracts.ts; src/modules/chain/validate-sig-offchain.spec.ts fails when it is stale.\n' +
    '// Regenerate: npm run contracts:bytecode\n' +
    `export const VALIDATE_SIG_OFFCHAIN_BYTECODE =\n${lines};\n`,
);
