import { isExecutionFault } from './ethers-chain-reader';

describe('isExecutionFault: an eth_call error about the call, not about the node', () => {
  it.each([
    // Hardhat 2.29, as measured on the local node.
    { code: -32000, message: 'Transaction ran out of gas' },
    { code: -32603, message: 'Error: Transaction reverted without a reason string' },
    { code: -32603, message: 'Error: VM Exception while processing transaction: invalid opcode' },
    { code: -32603, message: 'Error: VM Exception while processing transaction: reverted with an unrecognized custom error' },
    // Geth and its forks.
    { code: 3, message: 'execution reverted', data: '0x08c379a0' },
    { code: -32000, message: 'execution reverted' },
    { code: -32000, message: 'out of gas' },
    { code: -32000, message: 'invalid opcode: INVALID' },
    { code: -32000, message: 'invalid opcode: opcode 0xfe not defined' },
    { code: -32000, message: 'invalid jump destination' },
    { code: -32000, message: 'stack underflow (0 <=> 1)' },
    { code: -32000, message: 'max call depth exceeded' },
    { code: -32000, message: 'write protection' },
    { code: -32000, message: 'return data out of bounds' },
    { code: -32000, message: 'contract creation code storage out of gas' },
    { code: -32000, message: 'invalid code: must not begin with 0xef' },
    { code: -32000, message: 'gas uint64 overflow' },
    // Reth.
    { code: -32003, message: 'EVM error InvalidFEOpcode' },
    { code: -32003, message: 'EVM error OpcodeNotFound' },
    { code: -32003, message: 'EVM error StackUnderflow' },
    // Nethermind and Besu.
    { code: -32015, message: 'VM execution error.', data: 'Reverted 0x' },
    { code: -32000, message: 'Execution reverted' },
    { code: -32015, message: 'VM Exception while processing transaction: bad instruction' },
  ])('$message ($code) is the call failing', (error) => {
    expect(isExecutionFault(error)).toBe(true);
  });

  it.each([
    { code: -32000, message: 'header not found' },
    { code: -32000, message: 'Received invalid block tag 16777215. Latest block number is 1' },
    { code: -32005, message: 'request rate exceeded' },
    { code: -32603, message: 'Internal error' },
    { code: 429, message: 'Too Many Requests' },
    { code: -32000, message: 'missing trie node 4a1f… (path )' },
    { code: -32601, message: 'the method eth_call does not exist/is not available' },
  ])('$message ($code) is the node failing', (error) => {
    expect(isExecutionFault(error)).toBe(false);
  });

  it('is false for anything that is not a JSON-RPC error object', () => {
    for (const value of [undefined, null, 'execution reverted', 3, {}]) expect(isExecutionFault(value)).toBe(false);
  });
});
