import { randomBytes } from 'node:crypto';
import { admin, createOnboardedMerchant, createPartner } from '../factories/partners';
import { recordProofEvent } from '../factories/events';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { Receiver } from '../support/receiver';
import { testEnv } from '../support/test-env';
import { closeSql, sql } from '../support/db';
import { sealSecret } from '../support/secrets';

/*
 * The SSRF guard as production runs it (WEBHOOK_ALLOW_PRIVATE_URLS=false): internal addresses are refused
 * when a URL is saved, and again at every attempt, against the address actually connected to. No request
 * leaves loopback: refused URLs are judged without connecting, and the only DNS names are localhost ones.
 */
let svc: TestService;
/** Direct SQL on the run's database, for arranging and checking stored state. */
const db = { query: sql };
let rec: Receiver;

beforeAll(async () => {
  svc = await startService({
    worker: true,
    env: {
      WEBHOOK_ALLOW_PRIVATE_URLS: 'false',
      WEBHOOK_RETRY_DELAYS_MS: '200',
      WEBHOOK_MAX_ATTEMPTS: '2',
      WEBHOOK_TIMEOUT_MS: '2000',
      // Queues of its own: no worker of another file (with private URLs allowed) takes these jobs.
      REDIS_PREFIX: `${testEnv().redisPrefix}-whssrf`,
    },
  });
  rec = await Receiver.start();
});
afterAll(async () => {
  await closeSql();
  await svc?.close();
  await rec?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('at save time (admin PUT)', () => {
  it.each([
    ['https://127.0.0.1/hook', /loopback/],
    ['https://127.1/hook', /loopback/],
    ['https://2130706433/hook', /loopback/],
    ['https://0x7f000001/hook', /loopback/],
    ['https://0177.0.0.1/hook', /loopback/],
    ['https://127.0.0.1:8443/hook', /loopback/],
    ['https://[::1]/hook', /loopback/],
    ['https://[::ffff:127.0.0.1]/hook', /loopback.*IPv4-mapped/],
    ['https://[::ffff:7f00:1]/hook', /loopback.*IPv4-mapped/],
    ['https://[64:ff9b::7f00:1]/hook', /NAT64/],
    ['https://[2002:7f00:1::]/hook', /6to4/],
    ['https://localhost/hook', /internal name/],
    ['https://LOCALHOST./hook', /internal name/],
    ['https://169.254.169.254/latest/meta-data/', /metadata/],
    ['https://[::ffff:169.254.169.254]/', /metadata/],
    ['https://[fd00:ec2::254]/', /metadata/],
    ['https://metadata.google.internal/computeMetadata/v1/', /internal name/],
    ['https://10.0.0.1/hook', /private/],
    ['https://172.16.0.1/hook', /private/],
    ['https://192.168.1.1/hook', /private/],
    ['https://169.254.1.1/hook', /link-local/],
    ['https://[fe80::1]/hook', /link-local/],
    ['https://100.64.0.1/hook', /carrier-grade NAT/],
    ['https://[fd00::1]/hook', /unique-local/],
    ['https://[fc00::1]/hook', /unique-local/],
    ['https://0.0.0.0/hook', /unspecified/],
    ['https://[::]/hook', /unspecified/],
    ['https://224.0.0.1/hook', /multicast/],
    ['https://[ff02::1]/hook', /multicast/],
    ['https://255.255.255.255/hook', /broadcast/],
    ['http://93.184.216.34/hook', /scheme must be https/],
    ['https://user:pass@93.184.216.34/hook', /credentials/],
  ])('refuses %s', async (url, reason) => {
    // A partner per URL: each refusal counts towards the partner's 10 updates a minute.
    const p = await createPartner(svc);
    const r = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url, enabled: true });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'invalid_request', errors: [{ field: 'url', message: expect.stringMatching(reason) }] });
    const [row] = await db.query(`SELECT e.url AS webhook_url, COALESCE(e.enabled, false) AS webhook_enabled, e.secret AS webhook_secret FROM partners p LEFT JOIN webhook_endpoints e ON e.partner_id = p.id WHERE p.id = $1`, [p.id]);
    expect(row).toEqual({ webhook_url: null, webhook_enabled: false, webhook_secret: null });
  });

  it('accepts a public https address (a literal: no DNS, no connection)', async () => {
    const p = await createPartner(svc);
    const r = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'https://93.184.216.34/hooks/prs', enabled: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, url: 'https://93.184.216.34/hooks/prs', enabled: true });
  });

  it('refuses a new URL with a space or a control character (stored and posted URLs would differ); a stored one may be saved again as it is', async () => {
    const p = await createPartner(svc);
    for (const url of ['https://93.184.216.34/hook\r\n\t/other', ' https://93.184.216.34/hook', 'https://93.184.216.34/my hook']) {
      const r = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url, enabled: true });
      expect(r.body).toEqual({ ok: false, error: 'invalid_request', errors: [{ field: 'url', message: 'URL must not contain spaces or control characters' }] });
    }
    // Stored before the rule: switching webhooks off with it must not need it mended first.
    const legacy = 'https://93.184.216.34/my hook';
    expect((await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'https://93.184.216.34/hook', enabled: true })).status).toBe(200);
    await db.query(`UPDATE webhook_endpoints SET url = $2 WHERE partner_id = $1`, [p.id, legacy]);
    const off = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: legacy, enabled: false });
    expect(off.body).toMatchObject({ ok: true, url: legacy, enabled: false });
  });
});

describe('at delivery time', () => {
  // The stored URL passed the check when it was saved; now its name resolves to loopback (as after a DNS
  // change or a rebinding attack). It is written straight into the table, since the PUT would refuse it.
  it.each([
    // What a name resolves to is not told (the partner reads the attempt log); a literal is the partner's own.
    ['a name that resolves to loopback', (port: number) => `https://localhost:${port}/hook`, /^localhost resolves to an address that is not public$/],
    ['a loopback literal', (port: number) => `https://127.0.0.1:${port}/hook`, /loopback/],
  ])('%s is refused: attempts recorded as forbidden_address, nothing sent', async (_, urlFor, said) => {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const url = urlFor(rec.port);
    await db.query(
      `INSERT INTO webhook_endpoints (partner_id, url, enabled, enabled_at, secret) VALUES ($1, $2, true, now(), $3)`,
      [p.id, url, sealSecret(p.id, randomBytes(32).toString('hex'))],
    );
    const request = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 500 });
    const ev = await recordProofEvent(svc, { partnerId: p.id, requestId: request.request_id });

    const deadline = Date.now() + 10_000;
    let state = '';
    while (Date.now() < deadline && state !== 'abandoned') {
      await sleep(100);
      [{ state }] = await db.query(`SELECT state FROM webhook_events WHERE id = $1`, [ev.id]);
    }
    expect(state).toBe('abandoned');
    const attempts = await db.query(`SELECT attempt, status_code, error_class, error_message, outcome FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`, [ev.id]);
    expect(attempts).toEqual([
      { attempt: 1, status_code: null, error_class: 'forbidden_address', error_message: expect.stringMatching(said), outcome: 'retry' },
      { attempt: 2, status_code: null, error_class: 'forbidden_address', error_message: expect.stringMatching(said), outcome: 'abandoned' },
    ]);
    expect(rec.connections).toBe(0);
    expect(rec.calls).toHaveLength(0);
  });
});
