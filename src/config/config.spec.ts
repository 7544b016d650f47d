import { ConfigError, loadConfig as load, parseRates, type AppConfig } from './config';

/** The development defaults apply only with NODE_ENV exactly development or test: these specs run as test. */
const loadConfig = (env: Record<string, string>) => load({ NODE_ENV: 'test', ...env });

/** loadConfig on exactly this environment (never process.env), returning the error it stops with. */
function failure(env: Record<string, string>): ConfigError {
  try {
    load(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

const TOKEN = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const CHAIN = { CHAIN_TEST_RPC_URL: 'http://127.0.0.1:8545', CHAIN_TEST_CHAIN_ID: '31337', CHAIN_TEST_TOKEN_ADDRESS: TOKEN };
const HEX_KEY = 'ab'.repeat(32);
const PRODUCTION = { NODE_ENV: 'production', ADMIN_TOKEN: 'a-long-enough-admin-token', ONBOARDING_TOKEN_SECRET: 'a-secret-for-onboarding', SECRET_KEY: HEX_KEY };

describe('loadConfig defaults (DESIGN §2)', () => {
  let c: AppConfig;
  beforeAll(() => {
    c = loadConfig({});
  });

  it('uses the documented defaults', () => {
    expect(c).toMatchObject({
      production: false,
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/prs',
      redisUrl: 'redis://127.0.0.1:6379',
      port: 3000,
      adminPort: 3001,
      adminHost: '127.0.0.1',
      publicUrl: 'http://localhost:3000',
      payUrl: 'http://localhost:3000/pay',
      keyPrefix: 'prs',
      chains: {},
      rates: { usd: '1' },
      webhookRetryDelaysMs: [60000, 300000, 1800000, 7200000, 21600000, 86400000],
      webhookMaxAttempts: 6,
      webhookTimeoutMs: 8000,
      webhookRedriveMs: 15000,
      webhookStallMarginMs: 30000,
      portalPasswordCost: 15,
      apiKeyCacheMaxEntries: 10000,
      latePaymentGraceMinutes: 60,
      webhookAllowPrivateUrls: false,
      rateLimitScale: 1,
      onboardingLinkTtlHours: 168,
      publicRateLimit: 300,
      handleRequestRateLimit: 60,
      handleAddressRateLimit: 30,
      authFailureRateLimit: 60,
    });
  });

  it('reads ONBOARDING_LINK_TTL_HOURS as whole hours from 1 to 8760', () => {
    expect(loadConfig({ ONBOARDING_LINK_TTL_HOURS: '24' }).onboardingLinkTtlHours).toBe(24);
    // Development and tests may hash portal passwords more cheaply; production keeps at least the default.
    expect(loadConfig({ PORTAL_PASSWORD_COST: '10' }).portalPasswordCost).toBe(10);
    expect(loadConfig({ ...PRODUCTION, PORTAL_PASSWORD_COST: '16' }).portalPasswordCost).toBe(16);
    for (const bad of ['0', '1.5', 'week', '8761']) {
      expect(() => loadConfig({ ONBOARDING_LINK_TTL_HOURS: bad })).toThrow(/ONBOARDING_LINK_TTL_HOURS/);
    }
  });

  it('reads DATABASE_QUERY_TIMEOUT_MS: 30 s by default, from 100 ms to an hour', () => {
    expect(c.databaseQueryTimeoutMs).toBe(30000);
    expect(loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '1500' }).databaseQueryTimeoutMs).toBe(1500);
    for (const bad of ['0', '99', '1.5', 'soon', '3600001']) {
      expect(() => loadConfig({ DATABASE_QUERY_TIMEOUT_MS: bad })).toThrow(/DATABASE_QUERY_TIMEOUT_MS/);
    }
  });

  it('reads RATES_MAX_AGE_MS: one hour by default, at least two refresh intervals', () => {
    expect(c.ratesMaxAgeMs).toBe(3600000);
    expect(loadConfig({ RATES_MAX_AGE_MS: '600000' }).ratesMaxAgeMs).toBe(600000);
    // A longer refresh interval without a max age: two of its intervals, never refusals between refreshes.
    expect(loadConfig({ RATES_REFRESH_INTERVAL_MS: '3600000' }).ratesMaxAgeMs).toBe(7200000);
    expect(loadConfig({ RATES_REFRESH_INTERVAL_MS: '60000', RATES_MAX_AGE_MS: '120000' }).ratesMaxAgeMs).toBe(120000);
  });

  it('takes a short admin token outside production (DESIGN §2 sets no length; production needs 12 characters)', () => {
    expect(loadConfig({ NODE_ENV: 'test', ADMIN_TOKEN: 'admin-token' }).adminToken).toBe('admin-token');
  });

  it('has a development admin token outside production', () => {
    expect(typeof c.adminToken).toBe('string');
    expect(c.adminToken.length).toBeGreaterThanOrEqual(12);
  });

  it('marks cookies Secure exactly when PUBLIC_URL is https, whatever the scheme\'s case', () => {
    expect(c.secureCookies).toBe(false);
    expect(loadConfig({ PUBLIC_URL: 'https://pay.example.com' }).secureCookies).toBe(true);
    expect(loadConfig({ PUBLIC_URL: 'HTTPS://pay.example.com' }).secureCookies).toBe(true);
    expect(loadConfig({ PUBLIC_URL: 'http://https.example.com' }).secureCookies).toBe(false);
  });

  it('derives PAY_URL from PUBLIC_URL and drops trailing slashes', () => {
    const x = loadConfig({ PUBLIC_URL: 'https://pay.example.com/' });
    expect(x.publicUrl).toBe('https://pay.example.com');
    expect(x.payUrl).toBe('https://pay.example.com/pay');
    expect(loadConfig({ PAY_URL: 'https://p.example.com/x/' }).payUrl).toBe('https://p.example.com/x');
    expect(loadConfig({ PAY_URL: 'https://p.example.com' }).payUrl).toBe('https://p.example.com');
    expect(loadConfig({ PAY_URL: 'https://shop.example.com/checkout/now' }).payUrl).toBe('https://shop.example.com/checkout/now');
  });

  it.each(['/api/v1/requests', '/API/v1/merchants', '/pay/api', '/dashboard/requests', '/portal', '/m', '/assets/x', '/plan/api', '/onboarding', '/admin'])(
    'refuses a PAY_URL path under a route the service serves (%s): its page would shadow that route',
    (path) => {
      expect(() => loadConfig({ PAY_URL: `https://p.example.com${path}` })).toThrow(/PAY_URL/);
    },
  );

  it('reads a chain per mode, token address lower-cased', () => {
    const x = loadConfig({ ...CHAIN, CHAIN_TEST_CONFIRMATIONS: '3' });
    expect(x.chains.test).toEqual({ rpcUrl: 'http://127.0.0.1:8545', chainId: 31337n, tokenAddress: TOKEN.toLowerCase(), confirmations: 3 });
    expect(x.chains.live).toBeUndefined();
    expect(loadConfig(CHAIN).chains.test!.confirmations).toBe(1);
  });

  it('reads RATES in any case, codes lower-cased, rates kept as decimal strings', () => {
    expect(loadConfig({ RATES: 'USD:1,eur:0.92, JPY:150.25 ,inr:83.2,kwd:0.307' }).rates).toEqual({
      usd: '1', eur: '0.92', jpy: '150.25', inr: '83.2', kwd: '0.307',
    });
  });

  it('reads WEBHOOK_RETRY_DELAYS_MS as a list', () => {
    expect(loadConfig({ WEBHOOK_RETRY_DELAYS_MS: '10,20, 30' }).webhookRetryDelaysMs).toEqual([10, 20, 30]);
  });

  it('starts in production with the required secrets', () => {
    const x = loadConfig(PRODUCTION);
    expect(x.production).toBe(true);
    expect(x.adminToken).toBe(PRODUCTION.ADMIN_TOKEN);
  });

  it('has a development SECRET_KEY of 32 bytes and no previous key', () => {
    expect(c.secretKey).toHaveLength(32);
    expect(c.secretKeyPrevious).toBeNull();
  });

  it('reads SECRET_KEY and SECRET_KEY_PREVIOUS as 64 hex characters or base64 of 32 bytes', () => {
    const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => 250 - i));
    for (const raw of [bytes.toString('hex'), bytes.toString('hex').toUpperCase(), bytes.toString('base64'), bytes.toString('base64url')]) {
      const x = loadConfig({ SECRET_KEY: raw, SECRET_KEY_PREVIOUS: raw });
      expect(x.secretKey.equals(bytes)).toBe(true);
      expect(x.secretKeyPrevious!.equals(bytes)).toBe(true);
    }
  });

  it('allows PORT and ADMIN_PORT both 0 (ephemeral ports, as the tests use)', () => {
    const x = loadConfig({ PORT: '0', ADMIN_PORT: '0' });
    expect([x.port, x.adminPort]).toEqual([0, 0]);
  });
});

describe('loadConfig stops on a bad value, naming the variable (STYLE rule 8)', () => {
  it.each([
    ['PORT not a number', { PORT: 'abc' }, 'PORT'],
    ['PORT negative', { PORT: '-1' }, 'PORT'],
    ['PORT too large', { PORT: '70000' }, 'PORT'],
    ['ADMIN_PORT not a number', { ADMIN_PORT: '30x' }, 'ADMIN_PORT'],
    ['WEBHOOK_STALL_MARGIN_MS under a second', { WEBHOOK_STALL_MARGIN_MS: '999' }, 'WEBHOOK_STALL_MARGIN_MS'],
    ['PORTAL_PASSWORD_COST under 10', { PORTAL_PASSWORD_COST: '9' }, 'PORTAL_PASSWORD_COST'],
    ['PORTAL_PASSWORD_COST over 17', { PORTAL_PASSWORD_COST: '18' }, 'PORTAL_PASSWORD_COST'],
    ['NODE_ENV=production with PORTAL_PASSWORD_COST under 15', { ...PRODUCTION, PORTAL_PASSWORD_COST: '14' }, 'PORTAL_PASSWORD_COST'],
    ['API_KEY_CACHE_MAX_ENTRIES under 5', { API_KEY_CACHE_MAX_ENTRIES: '4' }, 'API_KEY_CACHE_MAX_ENTRIES'],
    ['RATES without a rate', { RATES: 'usd' }, 'RATES'],
    ['RATES with a zero rate', { RATES: 'usd:0' }, 'RATES'],
    ['RATES with a zero decimal rate', { RATES: 'usd:1,eur:0.00' }, 'RATES'],
    ['RATES with a negative rate', { RATES: 'usd:-1' }, 'RATES'],
    ['RATES with a bad code', { RATES: 'us:1' }, 'RATES'],
    ['RATES with exponent notation', { RATES: 'usd:1e2' }, 'RATES'],
    ['RATES empty list', { RATES: ',' }, 'RATES'],
    ['CHAIN_TEST_TOKEN_ADDRESS too short', { ...CHAIN, CHAIN_TEST_TOKEN_ADDRESS: '0x1234' }, 'CHAIN_TEST_TOKEN_ADDRESS'],
    ['CHAIN_TEST_TOKEN_ADDRESS not hex', { ...CHAIN, CHAIN_TEST_TOKEN_ADDRESS: `0x${'g'.repeat(40)}` }, 'CHAIN_TEST_TOKEN_ADDRESS'],
    ['CHAIN_TEST_TOKEN_ADDRESS without 0x', { ...CHAIN, CHAIN_TEST_TOKEN_ADDRESS: 'a'.repeat(40) }, 'CHAIN_TEST_TOKEN_ADDRESS'],
    ['CHAIN_TEST_TOKEN_ADDRESS missing', { CHAIN_TEST_RPC_URL: CHAIN.CHAIN_TEST_RPC_URL, CHAIN_TEST_CHAIN_ID: '31337' }, 'CHAIN_TEST_TOKEN_ADDRESS'],
    ['CHAIN_TEST_CHAIN_ID not a number', { ...CHAIN, CHAIN_TEST_CHAIN_ID: 'mainnet' }, 'CHAIN_TEST_CHAIN_ID'],
    ['CHAIN_TEST_CHAIN_ID zero', { ...CHAIN, CHAIN_TEST_CHAIN_ID: '0' }, 'CHAIN_TEST_CHAIN_ID'],
    ['CHAIN_TEST_CHAIN_ID past 2^63 - 1', { ...CHAIN, CHAIN_TEST_CHAIN_ID: '9223372036854775808' }, 'CHAIN_TEST_CHAIN_ID'],
    ['CHAIN_TEST_RPC_URL a websocket (the reader speaks HTTP only)', { ...CHAIN, CHAIN_TEST_RPC_URL: 'ws://127.0.0.1:8545' }, 'CHAIN_TEST_RPC_URL'],
    ['CHAIN_LIVE_RPC_URL a secure websocket', { CHAIN_LIVE_RPC_URL: 'wss://rpc.example', CHAIN_LIVE_CHAIN_ID: '1', CHAIN_LIVE_TOKEN_ADDRESS: TOKEN }, 'CHAIN_LIVE_RPC_URL'],
    ['CHAIN_LIVE_TOKEN_ADDRESS bad', { CHAIN_LIVE_RPC_URL: 'https://rpc.example', CHAIN_LIVE_CHAIN_ID: '1', CHAIN_LIVE_TOKEN_ADDRESS: 'x' }, 'CHAIN_LIVE_TOKEN_ADDRESS'],
    ['NODE_ENV=production without ADMIN_TOKEN', { ...PRODUCTION, ADMIN_TOKEN: undefined }, 'ADMIN_TOKEN'],
    ['NODE_ENV=production with an empty ADMIN_TOKEN', { ...PRODUCTION, ADMIN_TOKEN: '' }, 'ADMIN_TOKEN'],
    ['NODE_ENV=production with an ADMIN_TOKEN under 12 characters', { ...PRODUCTION, ADMIN_TOKEN: 'admin-token' }, 'ADMIN_TOKEN'],
    ['NODE_ENV=production without ONBOARDING_TOKEN_SECRET', { ...PRODUCTION, ONBOARDING_TOKEN_SECRET: undefined }, 'ONBOARDING_TOKEN_SECRET'],
    ['NODE_ENV=production without SECRET_KEY', { ...PRODUCTION, SECRET_KEY: undefined }, 'SECRET_KEY'],
    ['SECRET_KEY too short (hex)', { SECRET_KEY: 'ab'.repeat(31) }, 'SECRET_KEY'],
    ['SECRET_KEY too long (hex)', { SECRET_KEY: 'ab'.repeat(33) }, 'SECRET_KEY'],
    ['SECRET_KEY base64 of 31 bytes', { SECRET_KEY: Buffer.alloc(31, 7).toString('base64') }, 'SECRET_KEY'],
    ['SECRET_KEY base64 of 33 bytes', { SECRET_KEY: Buffer.alloc(33, 7).toString('base64') }, 'SECRET_KEY'],
    ['SECRET_KEY a passphrase', { SECRET_KEY: 'correct horse battery staple' }, 'SECRET_KEY'],
    ['SECRET_KEY_PREVIOUS malformed', { SECRET_KEY: HEX_KEY, SECRET_KEY_PREVIOUS: 'xyz' }, 'SECRET_KEY_PREVIOUS'],
    ['PORT equal to ADMIN_PORT', { PORT: '4000', ADMIN_PORT: '4000' }, 'ADMIN_PORT'],
    ['PORT equal to the default ADMIN_PORT', { PORT: '3001' }, 'ADMIN_PORT'],
    ['WEBHOOK_RETRY_DELAYS_MS with a non-number', { WEBHOOK_RETRY_DELAYS_MS: '1,x' }, 'WEBHOOK_RETRY_DELAYS_MS'],
    ['WEBHOOK_RETRY_DELAYS_MS with an empty entry', { WEBHOOK_RETRY_DELAYS_MS: '1,,2' }, 'WEBHOOK_RETRY_DELAYS_MS'],
    ['WEBHOOK_MAX_ATTEMPTS zero', { WEBHOOK_MAX_ATTEMPTS: '0' }, 'WEBHOOK_MAX_ATTEMPTS'],
    ['WEBHOOK_ALLOW_PRIVATE_URLS not a boolean', { WEBHOOK_ALLOW_PRIVATE_URLS: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE_URLS'],
    ['PUBLIC_URL not a URL', { PUBLIC_URL: 'localhost:3000' }, 'PUBLIC_URL'],
    ['PUBLIC_URL of another protocol', { PUBLIC_URL: 'ftp://example.com' }, 'PUBLIC_URL'],
    ['DATABASE_URL not postgres', { DATABASE_URL: 'mysql://localhost/db' }, 'DATABASE_URL'],
    ['REDIS_URL not redis', { REDIS_URL: 'http://localhost:6379' }, 'REDIS_URL'],
    ['KEY_PREFIX with upper case', { KEY_PREFIX: 'PRS' }, 'KEY_PREFIX'],
    ['KEY_PREFIX with an underscore', { KEY_PREFIX: 'p_s' }, 'KEY_PREFIX'],
    ['RATE_LIMIT_SCALE zero', { RATE_LIMIT_SCALE: '0' }, 'RATE_LIMIT_SCALE'],
    ['RATES_MAX_AGE_MS not a number', { RATES_MAX_AGE_MS: '1h' }, 'RATES_MAX_AGE_MS'],
    ['RATES_MAX_AGE_MS under two refresh intervals', { RATES_MAX_AGE_MS: '599999' }, 'RATES_MAX_AGE_MS'],
    ['RATES_MAX_AGE_MS under two of a set refresh interval', { RATES_REFRESH_INTERVAL_MS: '60000', RATES_MAX_AGE_MS: '119999' }, 'RATES_MAX_AGE_MS'],
    ['RATES_MAX_AGE_MS over 7 days', { RATES_MAX_AGE_MS: '604800001' }, 'RATES_MAX_AGE_MS'],
  ] as const)('%s', (_label, env, variable) => {
    const e = failure({ NODE_ENV: 'test', ...env } as Record<string, string>);
    expect(e.variable).toBe(variable);
    expect(e.message).toContain(variable);
  });
});

describe('CHAIN_<MODE>_CONFIRMATIONS (DESIGN §7 "Finality")', () => {
  it('takes a number of blocks or the word finalized', () => {
    expect(loadConfig({ ...CHAIN, CHAIN_TEST_CONFIRMATIONS: '12' }).chains.test!.confirmations).toBe(12);
    expect(loadConfig({ ...CHAIN, CHAIN_TEST_CONFIRMATIONS: 'finalized' }).chains.test!.confirmations).toBe('finalized');
  });

  it('defaults to 1 in development and test', () => {
    expect(loadConfig({ ...CHAIN }).chains.test!.confirmations).toBe(1);
    expect(load({ NODE_ENV: 'development', ...CHAIN }).chains.test!.confirmations).toBe(1);
  });

  it.each(['0', '-1', '1.5', 'Finalized', 'final', 'safe', 'latest', '1001', ' 3'])('refuses %p, naming the variable', (value) => {
    const e = failure({ NODE_ENV: 'test', ...CHAIN, CHAIN_TEST_CONFIRMATIONS: value });
    expect(e.variable).toBe('CHAIN_TEST_CONFIRMATIONS');
    expect(e.message).toContain('finalized');
  });

  it('has no default outside development and test: a configured mode without it stops the start', () => {
    const live = { CHAIN_LIVE_RPC_URL: 'https://rpc.example', CHAIN_LIVE_CHAIN_ID: '1', CHAIN_LIVE_TOKEN_ADDRESS: TOKEN };
    for (const env of [{ ...PRODUCTION, ...live }, { ...PRODUCTION, NODE_ENV: 'staging', ...live }]) {
      const e = failure(env);
      expect(e.variable).toBe('CHAIN_LIVE_CONFIRMATIONS');
      expect(e.message).toContain('CHAIN_LIVE_CONFIRMATIONS');
    }
    expect(failure({ ...PRODUCTION, ...CHAIN }).variable).toBe('CHAIN_TEST_CONFIRMATIONS');
    // Given, it starts; an unconfigured mode needs nothing.
    expect(load({ ...PRODUCTION, ...live, CHAIN_LIVE_CONFIRMATIONS: 'finalized' }).chains.live!.confirmations).toBe('finalized');
    expect(load({ ...PRODUCTION, ...live, CHAIN_LIVE_CONFIRMATIONS: '20' }).chains.live!.confirmations).toBe(20);
    expect(load(PRODUCTION).chains).toEqual({});
  });
});

describe('production rules unless NODE_ENV is exactly development or test (issue 10 point 7)', () => {
  const ALL = 'ADMIN_TOKEN, ONBOARDING_TOKEN_SECRET, SECRET_KEY';
  it.each([
    ['unset', {}],
    ['production', { NODE_ENV: 'production' }],
    ['empty', { NODE_ENV: '' }],
    ['misspelt "prod"', { NODE_ENV: 'prod' }],
    ['misspelt "developement"', { NODE_ENV: 'developement' }],
    ['"Development" (case differs)', { NODE_ENV: 'Development' }],
    ['"test " (trailing space)', { NODE_ENV: 'test ' }],
    ['staging', { NODE_ENV: 'staging' }],
  ])('NODE_ENV %s without secrets stops, naming every missing one', (_label, env: Record<string, string>) => {
    const e = failure(env);
    expect(e.variable).toBe(ALL);
    expect(e.message).toContain(ALL);
    expect(e.message).toMatch(/development or test/);
  });

  it('names only the missing ones', () => {
    expect(failure({ ADMIN_TOKEN: PRODUCTION.ADMIN_TOKEN }).variable).toBe('ONBOARDING_TOKEN_SECRET, SECRET_KEY');
    expect(failure({ SECRET_KEY: HEX_KEY, ADMIN_TOKEN: PRODUCTION.ADMIN_TOKEN }).variable).toBe('ONBOARDING_TOKEN_SECRET');
  });

  it('starts with all three whatever NODE_ENV says, and then counts as production', () => {
    const { NODE_ENV: _ignored, ...secrets } = PRODUCTION;
    for (const nodeEnv of [undefined, 'staging', 'prod']) {
      const x = load(nodeEnv === undefined ? secrets : { ...secrets, NODE_ENV: nodeEnv });
      expect(x.production).toBe(true);
      expect(x.secretKey.equals(Buffer.from(HEX_KEY, 'hex'))).toBe(true);
    }
  });

  it.each(['development', 'test'])('NODE_ENV=%s starts without secrets (development defaults)', (nodeEnv) => {
    const x = load({ NODE_ENV: nodeEnv });
    expect(x.production).toBe(false);
    expect(x.adminToken.length).toBeGreaterThanOrEqual(12);
  });
});

describe('parseRates', () => {
  it('parses a list', () => {
    expect(parseRates('usd:1,eur:0.92')).toEqual({ usd: '1', eur: '0.92' });
  });
  it('names the variable it was given', () => {
    expect(() => parseRates('nope', 'RATES_X')).toThrow(/RATES_X/);
  });
});
