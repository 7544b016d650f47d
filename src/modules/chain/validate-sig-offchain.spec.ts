import { loadArtifact } from '../../../scripts/chain/compile-contracts';
import { VALIDATE_SIG_OFFCHAIN_BYTECODE } from './validate-sig-offchain.bytecode';

it('the committed ERC-6492 validator bytecode is what contracts/UniversalSigValidator.sol compiles to', () => {
  expect(VALIDATE_SIG_OFFCHAIN_BYTECODE).toBe(loadArtifact('UniversalSigValidator.sol', 'ValidateSigOffchain').bytecode);
});
