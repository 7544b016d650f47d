import {
  assertWebhookUrlAllowed,
  assertWebhookUrlText,
  forbiddenAddressReason,
  isForbiddenAddress,
  parseWebhookUrl,
  WebhookUrlRejectedError,
} from './url-guard';

// Only the guard is exercised: no connection is made anywhere, and the only DNS names looked up are
// localhost-style names answered from the hosts file (and one .invalid name, which never resolves).

async function rejection(url: string, allowPrivate = false): Promise<WebhookUrlRejectedError> {
  try {
    await assertWebhookUrlAllowed(url, { allowPrivate });
  } catch (e) {
    expect(e).toBeInstanceOf(WebhookUrlRejectedError);
    return e as WebhookUrlRejectedError;
  }
  throw new Error(`expected ${url} to be rejected`);
}

describe('assertWebhookUrlAllowed (allowPrivate: false)', () => {
  it.each([
    // loopback in every notation
    ['https://127.0.0.1/hook', /loopback/],
    ['https://127.1/hook', /loopback/],
    ['https://2130706433/hook', /loopback/],
    ['https://0x7f000001/hook', /loopback/],
    ['https://0177.0.0.1/hook', /loopback/],
    ['https://017700000001/hook', /loopback/],
    ['https://0x7f.1/hook', /loopback/],
    ['https://127.0.0.1:8443/hook', /loopback/],
    ['https://[::1]/hook', /loopback/],
    ['https://[0:0:0:0:0:0:0:1]/hook', /loopback/],
    ['https://[::ffff:127.0.0.1]/hook', /loopback.*IPv4-mapped/],
    ['https://[::ffff:7f00:1]/hook', /loopback.*IPv4-mapped/],
    ['https://[::ffff:0:7f00:1]/hook', /loopback.*IPv4-translated/],
    ['https://[::127.0.0.1]/hook', /IPv4-compatible/],
    ['https://[64:ff9b::7f00:1]/hook', /loopback.*NAT64/],
    ['https://[64:ff9b::a00:1]/hook', /private.*NAT64/],
    ['https://[64:ff9b:1::a00:1]/hook', /local-use NAT64/],
    ['https://[2002:7f00:1::]/hook', /loopback.*6to4/],
    ['https://[2002:c0a8:101::1]/hook', /private.*6to4/],
    ['https://localhost/hook', /internal name/],
    ['https://LOCALHOST./hook', /internal name/],
    ['https://api.localhost/hook', /internal name/],
    // cloud metadata
    ['https://169.254.169.254/latest/meta-data/', /metadata/],
    ['https://[::ffff:169.254.169.254]/', /metadata/],
    ['https://[fd00:ec2::254]/', /metadata/],
    ['https://metadata.google.internal/computeMetadata/v1/', /internal name/],
    // private, link-local, CGNAT, unique-local
    ['https://10.0.0.1/hook', /private/],
    ['https://10.1/hook', /private/],
    ['https://172.16.0.1/hook', /private/],
    ['https://172.31.255.255/hook', /private/],
    ['https://192.168.1.1/hook', /private/],
    ['https://169.254.1.1/hook', /link-local/],
    ['https://[fe80::1]/hook', /link-local/],
    ['https://100.64.0.1/hook', /carrier-grade NAT/],
    ['https://100.127.255.254/hook', /carrier-grade NAT/],
    ['https://[fd00::1]/hook', /unique-local/],
    ['https://[fc00::1]/hook', /unique-local/],
    ['https://[fec0::1]/hook', /site-local/],
    // unspecified, multicast, broadcast, reserved
    ['https://0.0.0.0/hook', /unspecified/],
    ['https://0/hook', /unspecified/],
    ['https://0.1.2.3/hook', /unspecified/],
    ['https://[::]/hook', /unspecified/],
    ['https://224.0.0.1/hook', /multicast/],
    ['https://239.255.255.250/hook', /multicast/],
    ['https://[ff02::1]/hook', /multicast/],
    ['https://255.255.255.255/hook', /broadcast/],
    ['https://240.0.0.1/hook', /reserved/],
    ['https://198.18.0.1/hook', /reserved/],
    ['https://198.19.255.1/hook', /reserved/],
    ['https://192.0.2.10/hook', /reserved/],
    ['https://198.51.100.7/hook', /reserved/],
    ['https://203.0.113.9/hook', /reserved/],
    ['https://192.0.0.192/hook', /reserved/],
    ['https://[2001:db8::1]/hook', /reserved/],
    ['https://[100::1]/hook', /discard/],
    ['https://[2001::1]/hook', /Teredo/],
    // shape of the URL
    ['http://93.184.216.34/hook', /scheme must be https/],
    ['ftp://93.184.216.34/hook', /scheme must be https/],
    ['file:///etc/passwd', /scheme must be https/],
    ['javascript:alert(1)', /scheme must be https/],
    ['gopher://93.184.216.34:70/_', /scheme must be https/],
    ['https://user:pass@93.184.216.34/hook', /credentials/],
    ['https://user@93.184.216.34/hook', /credentials/],
    ['https://:pass@93.184.216.34/hook', /credentials/],
    ['https://93.184.216.34:0/hook', /port 0/],
    ['https://93.184.216.34:00/hook', /port 0/],
    ['not-a-url', /not a valid absolute URL/],
    ['/relative/hook', /not a valid absolute URL/],
    ['https://', /not a valid absolute URL/],
    ['https://[fe80::1%25eth0]/hook', /not a valid absolute URL/],
    ['https://256.0.0.1/hook', /not a valid absolute URL/],
    ['', /empty/],
    [`https://example.com/${'a'.repeat(2100)}`, /longer than/],
  ])('refuses %s', async (url, reason) => {
    const e = await rejection(url);
    expect(e.reason).toMatch(reason);
    expect(e.message).toContain(e.reason);
  });

  it('refuses a name that does not resolve', async () => {
    expect((await rejection('https://does-not-exist.invalid/hook')).reason).toMatch(/does not resolve/);
  });

  it.each([
    'https://93.184.216.34/hook',
    'https://93.184.216.34:8443/hooks/prs?partner=1#frag',
    'https://8.8.8.8/',
    'https://[2606:2800:220:1:248:1893:25c8:1946]/hook',
    'https://[::ffff:93.184.216.34]/hook',
    'https://[64:ff9b::5db8:d822]/hook',
    'https://[2002:5db8:d822::1]/hook',
    'https://172.32.0.1/hook',
    'https://100.128.0.1/hook',
    'https://11.0.0.1/hook',
  ])('accepts the public literal %s (no DNS involved)', async (url) => {
    await expect(assertWebhookUrlAllowed(url, { allowPrivate: false })).resolves.toBeUndefined();
  });
});

describe('assertWebhookUrlAllowed (allowPrivate: true)', () => {
  it.each([
    'http://127.0.0.1:3000/hook',
    'https://127.0.0.1/hook',
    'http://[::1]:3000/hook',
    'http://localhost:3000/hook',
    'http://10.0.0.1/hook',
    'http://169.254.169.254/',
    'https://93.184.216.34/hook',
  ])('accepts %s', async (url) => {
    await expect(assertWebhookUrlAllowed(url, { allowPrivate: true })).resolves.toBeUndefined();
  });

  it.each([
    ['ftp://127.0.0.1/hook', /scheme/],
    ['not-a-url', /not a valid absolute URL/],
    ['http://user:pass@127.0.0.1/hook', /credentials/],
    ['http://does-not-exist.invalid/hook', /does not resolve/],
  ])('still refuses %s', async (url, reason) => {
    expect((await rejection(url, true)).reason).toMatch(reason);
  });

  it.each([
    ['a newline and a tab, which the parser would drop', 'https://example.com/hook\r\n\t/other'],
    ['a leading space', ' https://example.com/hook'],
    ['a trailing space', 'https://example.com/hook '],
    ['a space inside', 'https://example.com/my hook'],
    ['NUL', 'https://example.com/\u0000'],
    ['DEL', 'https://example.com/\u007f'],
  ])('assertWebhookUrlText refuses %s: the URL posted to would not be the one stored', (_, url) => {
    expect(() => assertWebhookUrlText(url)).toThrow('URL must not contain spaces or control characters');
  });
});

describe('parseWebhookUrl', () => {
  it('canonicalises legacy IPv4 notations with the WHATWG parser', () => {
    expect(parseWebhookUrl('https://0x7f000001:8443/a?b=1', { allowPrivate: false }).hostname).toBe('127.0.0.1');
    expect(parseWebhookUrl('https://[::ffff:127.0.0.1]/', { allowPrivate: false }).hostname).toBe('[::ffff:7f00:1]');
  });
});

describe('isForbiddenAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '127.1',
    '2130706433',
    '0x7f000001',
    '0177.0.0.1',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:0:7f00:1',
    '::7f00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::c0a8:101',
    '64:ff9b:1::1',
    '2002:7f00:1::',
    '2002:a9fe:a9fe::1',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.0.1',
    '192.168.0.1',
    '169.254.0.1',
    '169.254.169.254',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    '100.64.0.1',
    'fc00::1',
    'fdff:ffff::1',
    '224.0.0.1',
    'ff02::1',
    '0.0.0.0',
    '0.255.255.255',
    '::',
    '255.255.255.255',
    '198.18.0.1',
    '198.19.0.1',
    '192.0.2.1',
    '198.51.100.1',
    '203.0.113.1',
    '2001:db8::1',
    '3fff::1',
    '2001::1',
    '100::1',
    '1::1',
    '',
    'localhost',
    'example.com',
    '999.1.1.1',
  ])('%s → forbidden', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
    expect(forbiddenAddressReason(ip)).not.toBeNull();
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '169.253.255.255',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:81b::200e',
    '::ffff:93.184.216.34',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s → allowed', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
    expect(forbiddenAddressReason(ip)).toBeNull();
  });
});
