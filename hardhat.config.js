// Used only by scripts/chain/local-node.ts, which runs `hardhat node` for tests and the sandbox.
// Contracts are compiled by scripts/chain/compile-contracts.ts (offline solc-js), never by Hardhat.
/** @type {import('hardhat/config').HardhatUserConfig} */
module.exports = {
  networks: {
    hardhat: {
      // scripts/chain/local-node.ts sets this for a second chain (tests of which chain a check runs on).
      chainId: Number(process.env.PRS_HARDHAT_CHAIN_ID || 31337),
      // Hardhat's well-known default mnemonic ("test test ... junk"): these keys are public, never fund them elsewhere.
      accounts: { count: 10 },
      mining: { auto: true, interval: 0 },
      // Behave like a real node: a reverting transaction is mined with receipt status 0 instead of the
      // RPC call failing, so tests can produce failed transactions on purpose.
      throwOnTransactionFailures: false,
    },
  },
  // `hardhat node` watches the artifacts folder; keep its folders away from ours (artifacts/*.json).
  paths: {
    artifacts: './.tmp/hardhat/artifacts',
    cache: './.tmp/hardhat/cache',
  },
};
