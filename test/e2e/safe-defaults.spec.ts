import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { testEnvVars } from '../support/app';

/**
 * Issue 10 point 7: the real entry point, started as production would start it, refuses to run on the
 * development defaults unless NODE_ENV is exactly development or test, and says which secrets are missing.
 */
const ROOT = join(__dirname, '..', '..');

/** Runs `src/main.ts --api` with exactly this environment; resolves with its exit code and output. */
function run(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts', '--api'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** The test environment without NODE_ENV and the three secrets, NODE_ENV set to `nodeEnv` when given. */
function withoutSecrets(nodeEnv?: string): Record<string, string> {
  const { NODE_ENV: _n, ADMIN_TOKEN: _a, ONBOARDING_TOKEN_SECRET: _o, SECRET_KEY: _s, ...rest } = testEnvVars();
  return nodeEnv === undefined ? rest : { ...rest, NODE_ENV: nodeEnv };
}

describe('the process stops without its secrets unless NODE_ENV is development or test', () => {
  it.each([
    ['unset', undefined],
    ['misspelt', 'prodcution'],
  ])('NODE_ENV %s: exit 1, one fatal line naming ADMIN_TOKEN, ONBOARDING_TOKEN_SECRET and SECRET_KEY', async (_label, nodeEnv) => {
    const { code, output } = await run(withoutSecrets(nodeEnv));
    expect(code).toBe(1);
    const fatal = output.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(fatal).toEqual([expect.objectContaining({ level: 'fatal', msg: expect.stringContaining('ADMIN_TOKEN, ONBOARDING_TOKEN_SECRET, SECRET_KEY') })]);
    expect(output).not.toContain('listener');
  }, 90000);
});
