import { isIPv4, isIPv6 } from 'node:net';

/** The eight 16-bit groups of an IPv6 address (zone id dropped, a trailing dotted IPv4 read as two groups). */
function ipv6Groups(address: string): number[] | null {
  let a = address.split('%')[0].toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const [b0, b1, b2, b3] = dotted[1].split('.').map(Number);
    a = `${a.slice(0, -dotted[1].length)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const halves = a.split('::');
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  return [...head, ...Array<string>(missing).fill('0'), ...tail].map((g) => parseInt(g, 16));
}

const MAPPED_DOTTED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

/**
 * The bucket a per-address limit counts a client in: an IPv4 address as itself (IPv4-mapped IPv6 included,
 * as a dual-stack listener reports IPv4 clients), an IPv6 address by its /64 — one subscriber or host usually
 * holds a whole /64, so counting single addresses would let it rotate through 2^64 of them.
 */
export function addressBucket(ip: string | undefined): string {
  if (!ip) return 'unknown';
  if (isIPv4(ip)) return ip;
  // Every call of the partner API asks (auth comes first): an IPv4 client of a dual-stack listener arrives
  // as ::ffff:a.b.c.d, which the general path below would parse group by group to the same answer.
  const mapped = MAPPED_DOTTED.exec(ip);
  if (mapped && isIPv4(mapped[1])) return mapped[1];
  if (!isIPv6(ip)) return ip;
  const g = ipv6Groups(ip);
  if (!g) return ip;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff].join('.');
  }
  return `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`;
}
