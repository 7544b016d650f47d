/** @type {import('jest').Config} */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];
// The @nestjs 12 packages (and a few others) ship ESM only; jest's CommonJS runtime needs them compiled.
const esmOnly = ['@nestjs', 'uuid', 'file-type', 'strtok3', 'token-types', '@tokenizer', 'peek-readable'];
module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/src', '<rootDir>/test', '<rootDir>/sdk'],
  testMatch: ['**/*.spec.ts'],
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  // Three workers, whatever the machine: global setup prepares a database and a Hardhat node for each. On this
  // host's two cores the suite is mostly waits (timeouts, leases, heartbeats); measured 2026-11-28: two workers
  // 492 s, three 353 s and 361 s, and 431 s with a busy loop taking one core (a slower host), every test green.
  maxWorkers: 3,
};
