import { addressBucket } from './client-address';

describe('addressBucket (issue 10 point 9: per-address limits count IPv6 by /64)', () => {
  it.each([
    ['IPv4 as itself', '203.0.113.7', '203.0.113.7'],
    ['another IPv4 address is another bucket', '203.0.113.8', '203.0.113.8'],
    ['IPv4-mapped IPv6 as IPv4', '::ffff:203.0.113.7', '203.0.113.7'],
    ['IPv4-mapped IPv6 in hex as IPv4', '::ffff:cb00:7107', '203.0.113.7'],
    ['IPv4-mapped IPv6, upper case', '::FFFF:203.0.113.7', '203.0.113.7'],
    ['IPv6 by its /64', '2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['IPv6 with leading zeros and upper case', '2001:0DB8:0001:0002:0:0:0:1', '2001:db8:1:2::/64'],
    ['IPv6 compressed inside the /64', '2001:db8::1', '2001:db8:0:0::/64'],
    ['IPv6 with a zone id', 'fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['IPv6 loopback', '::1', '0:0:0:0::/64'],
    ['not an address (kept as given)', 'unknown', 'unknown'],
  ])('%s', (_label, ip, bucket) => {
    expect(addressBucket(ip)).toBe(bucket);
  });

  it('puts every address of one /64 in one bucket and a neighbouring /64 in another', () => {
    const a = addressBucket('2001:db8:abcd:12::1');
    expect(addressBucket('2001:db8:abcd:12:ffff:ffff:ffff:ffff')).toBe(a);
    expect(addressBucket('2001:db8:abcd:12:1234::')).toBe(a);
    expect(addressBucket('2001:db8:abcd:13::1')).not.toBe(a);
  });

  it('undefined → one shared bucket', () => {
    expect(addressBucket(undefined)).toBe('unknown');
  });
});
