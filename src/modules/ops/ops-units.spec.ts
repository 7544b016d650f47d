import 'reflect-metadata';
import { REDACTED, loggablePath, makeScrubber, responseLevel } from './logging';
import { basicAuth } from './queue-board';
import { publicMessage } from './readiness.service';
import { verificationOutcome } from './verification-timer';

describe('log scrubbing', () => {
  const scrub = makeScrubber(['the-admin-token-123']);
  const key = `prs_live_${'aB3-_x'.repeat(7)}x`;
  const hex = 'ab'.repeat(32);
  it.each([
    ['an API key', `bad key ${key} used`, `bad key prs_live_${REDACTED} used`],
    ['a key with another prefix', 'acme_test_abcdefghij', `acme_test_${REDACTED}`],
    ['a webhook secret', `secret=${hex}.`, `secret=${REDACTED}.`],
    ['a signature header', `v1=${hex},t=1700000000`, `v1=${REDACTED},t=1700000000`],
    ['a SIWE signature', `sig 0x${'cd'.repeat(65)}`, `sig ${REDACTED}`],
    ['a bearer value', 'authorization: Bearer abc.def-ghi', `authorization: Bearer ${REDACTED}`],
    ['a basic value', 'Basic YWRtaW46c2VjcmV0', `Basic ${REDACTED}`],
    ['the onboarding page token', 'GET /onboarding/Zm9vYmFy-_baz', `GET /onboarding/${REDACTED}`],
    ['the onboarding API token', '/onboarding/api/Zm9vYmFy/wallet', `/onboarding/api/${REDACTED}/wallet`],
    // A plan's payer page is a capability URL too: whoever holds it sees the payer's plan and charges.
    ['the plan page token', 'GET /plan/Zm9vYmFy-_baz', `GET /plan/${REDACTED}`],
    ['the plan API token', 'GET /plan/api/Zm9vYmFy-_baz 404', `GET /plan/api/${REDACTED} 404`],
    ['a literal secret', 'token the-admin-token-123!', `token ${REDACTED}!`],
  ])('removes %s', (_what, input, output) => {
    expect(scrub(input)).toBe(output);
  });

  it.each([
    ['a tx hash', `0x${hex}`],
    ['a route pattern', '/onboarding/api/:token/wallet'],
    ['a plan route pattern', '/plan/api/:token'],
    ['a dashboard plan path', '/dashboard/api/plans/4b1c6a57-5d2c-4a8e-9c53-0e1f6f0b5a11/advance'],
    ['the bare API prefix', '/onboarding/api'],
    ['Nest route listing', 'OnboardingController {/onboarding/api}:'],
    ['a uuid path', '/api/v1/requests/4b1c6a57-5d2c-4a8e-9c53-0e1f6f0b5a11'],
  ])('keeps %s', (_what, input) => {
    expect(scrub(input)).toBe(input);
  });

  it('drops the query string of a logged path', () => {
    expect(loggablePath('/api/v1/requests?api_key=x&since=y')).toBe('/api/v1/requests');
  });

  it('logs successes at debug, client errors at info, server errors at error', () => {
    expect([200, 201, 304, 400, 404, 429, 500, 503].map((s) => responseLevel(s))).toEqual(
      ['debug', 'debug', 'debug', 'info', 'info', 'info', 'error', 'error'],
    );
    expect(responseLevel(200, new Error('aborted'))).toBe('error');
  });
});

describe('health messages', () => {
  it('reduce URLs to their origin', () => {
    expect(publicMessage(new Error('request to https://user:pw@rpc.example.com/v3/KEY123?x=1 failed'))).toBe(
      'request to https://rpc.example.com failed',
    );
  });
});

describe('verification outcome label', () => {
  it.each([
    ['verified', 'verified'],
    ['rejected: underpaid', 'rejected'],
    ['moot', 'moot'],
    [{ weird: true }, 'other'],
    ['Not A Label!', 'other'],
  ])('%j → %s', (value, label) => expect(verificationOutcome(value)).toBe(label));
});

describe('queue board basic auth', () => {
  /** Counts what the middleware records; the budget itself is AuthFailureLimiter's (e2e admin-auth-limit). */
  const recorded: string[] = [];
  const failures = { refuseIfBlocked: () => undefined, refuseIfOverBudget: async () => undefined, record: async (a: string) => void recorded.push(a) };
  const run = async (authorization?: string) => {
    const res: any = { headers: {} as Record<string, string>, code: 0, body: undefined as unknown };
    res.setHeader = (k: string, v: string) => (res.headers[k.toLowerCase()] = v);
    res.status = (c: number) => ((res.code = c), res);
    res.json = (b: unknown) => ((res.body = b), res);
    let passed = false;
    const headers = authorization === undefined ? {} : { authorization };
    await basicAuth('s3cret-token-x', failures)({ headers, socket: { remoteAddress: '::ffff:192.0.2.7' } } as any, res, () => (passed = true));
    return { passed, res };
  };
  beforeEach(() => (recorded.length = 0));
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  it('lets admin:ADMIN_TOKEN through, recording nothing', async () => {
    expect((await run(`Basic ${b64('admin:s3cret-token-x')}`)).passed).toBe(true);
    expect(recorded).toEqual([]);
  });
  it.each([undefined, `Basic ${b64('admin:s3cret-token')}`, `Basic ${b64('Admin:s3cret-token-x')}`, 'Bearer s3cret-token-x', 'Basic'])(
    'refuses %s with a challenge; wrong credentials are recorded against the peer address',
    async (authorization) => {
      const { passed, res } = await run(authorization);
      expect(passed).toBe(false);
      expect(res.code).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
      expect(recorded).toEqual(authorization === undefined ? [] : ['192.0.2.7']);
    },
  );
});
