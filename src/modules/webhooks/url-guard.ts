import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * SSRF guard for partner webhook URLs (DESIGN §2 WEBHOOK_ALLOW_PRIVATE_URLS): applied when a URL is saved
 * (assertWebhookUrlAllowed) and again at connect time by WebhookPoster, which checks the very address it
 * connects to with isForbiddenAddress, so a DNS answer that changes between save and delivery (rebinding)
 * cannot reach an internal address.
 */

export class WebhookUrlRejectedError extends Error {
  readonly code = 'webhook_url_rejected';

  constructor(readonly reason: string) {
    super(`webhook URL rejected: ${reason}`);
    this.name = 'WebhookUrlRejectedError';
  }
}

export interface UrlGuardOptions {
  /** WEBHOOK_ALLOW_PRIVATE_URLS: permits http:// and any resolvable address (tests, local sandbox). */
  allowPrivate: boolean;
}

const DNS_TIMEOUT_MS = 5000;
const MAX_URL_LENGTH = 2048;

// Names refused before any DNS: on a cloud VM they resolve to the metadata service, elsewhere to loopback.
const FORBIDDEN_HOSTNAMES = new Set(['localhost', 'metadata', 'metadata.google.internal', 'instance-data']);

const METADATA_V4 = ipaddr.IPv4.parse('169.254.169.254');
const METADATA_V6 = ipaddr.IPv6.parse('fd00:ec2::254'); // AWS IMDS over IPv6
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

// ipaddr.js range names → words for the rejection reason. Anything ipaddr.js does not call 'unicast' is
// refused, named here or not, so a range added by a later ipaddr.js version fails closed.
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'an unspecified address (0.0.0.0/8, ::)',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  private: 'a private address (RFC 1918)',
  reserved: 'a reserved address (documentation, benchmarking or future use)',
  uniqueLocal: 'a unique-local address (fc00::/7)',
  deprecatedSiteLocal: 'a site-local address (fec0::/10)',
  teredo: 'a Teredo tunnel address',
  benchmarking: 'a benchmarking address',
  discard: 'a discard-only address',
};

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

function v4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/** Why the address may not receive webhooks, or null when it may. */
function forbiddenBecause(addr: Addr): string | null {
  if (addr.kind() === 'ipv4') {
    const v4 = addr as ipaddr.IPv4;
    if (v4.match(METADATA_V4, 32)) return 'the cloud metadata address';
    const range = v4.range();
    if (range === 'unicast') return null;
    return RANGE_WORDS[range] ?? `a special-purpose address (${range})`;
  }

  const v6 = addr as ipaddr.IPv6;
  if (v6.match(METADATA_V6, 128)) return 'the cloud metadata address';
  const range = v6.range();
  const p = v6.parts;
  // Forms that carry an IPv4 address reach that IPv4 host: judge the embedded address.
  const embedded = (v4: ipaddr.IPv4, form: string): string | null => {
    const why = forbiddenBecause(v4);
    return why === null ? null : `${why} (as ${form} ${v4.toString()})`;
  };
  switch (range as string) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
      return embedded(v6.toIPv4Address(), 'IPv4-mapped');
    case 'rfc6145': // ::ffff:0:a.b.c.d, IPv4-translated
      return embedded(v4FromParts(p[6], p[7]), 'IPv4-translated');
    case 'rfc6052':
      if (v6.match(NAT64_WELL_KNOWN)) return embedded(v4FromParts(p[6], p[7]), 'NAT64');
      return 'a local-use NAT64 address (64:ff9b:1::/48)';
    case '6to4': // 2002:AABB:CCDD::/48 tunnels to a.b.c.d
      return embedded(v4FromParts(p[1], p[2]), '6to4');
    case 'unicast':
      if (p.slice(0, 6).every((x) => x === 0)) {
        // ::a.b.c.d (IPv4-compatible, deprecated) and everything else in ::/96.
        return 'an IPv4-compatible address (::/96)';
      }
      if (!v6.match(GLOBAL_UNICAST_V6)) return 'an address outside global unicast (2000::/3)';
      return null;
    default:
      return RANGE_WORDS[range] ?? `a special-purpose address (${range})`;
  }
}

function parseIp(ip: string): Addr | null {
  let s = typeof ip === 'string' ? ip.trim() : '';
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  // ipaddr.js accepts the legacy IPv4 notations too (2130706433, 0x7f000001, 0177.0.0.1, 127.1).
  if (s === '' || !ipaddr.isValid(s)) return null;
  try {
    return ipaddr.parse(s);
  } catch {
    return null;
  }
}

/**
 * True when a webhook may not be delivered to this IP address: loopback, private, link-local, CGNAT,
 * unique-local, multicast, unspecified, broadcast, reserved/documentation/benchmarking, cloud metadata,
 * and IPv6 forms that embed such an IPv4 address (mapped, translated, NAT64 64:ff9b::/96, 6to4).
 * Anything that is not an IP address at all is reported forbidden (fail closed). Pure: no DNS.
 */
export function isForbiddenAddress(ip: string): boolean {
  const addr = parseIp(ip);
  return addr === null || forbiddenBecause(addr) !== null;
}

/** The human reason isForbiddenAddress is true, or null. */
export function forbiddenAddressReason(ip: string): string | null {
  const addr = parseIp(ip);
  if (addr === null) return `"${ip}" is not an IP address`;
  return forbiddenBecause(addr);
}

/**
 * The synchronous part of the check: an absolute http(s) URL without credentials. Returns the parsed URL.
 * The poster uses it too, so save time and delivery time parse the URL with the same (WHATWG) parser that
 * also canonicalises legacy IPv4 notations (http://0x7f000001/ → 127.0.0.1).
 */
export function parseWebhookUrl(url: string, opts: UrlGuardOptions): URL {
  if (typeof url !== 'string' || url.length === 0) throw new WebhookUrlRejectedError('URL is empty');
  if (url.length > MAX_URL_LENGTH) throw new WebhookUrlRejectedError(`URL is longer than ${MAX_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new WebhookUrlRejectedError('not a valid absolute URL');
  }
  if (parsed.protocol !== 'https:' && !(opts.allowPrivate && parsed.protocol === 'http:')) {
    throw new WebhookUrlRejectedError(
      opts.allowPrivate ? 'scheme must be https or http' : `scheme must be https (got ${parsed.protocol.replace(/:$/, '')})`,
    );
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new WebhookUrlRejectedError('URL must not contain credentials (user:password@)');
  }
  if (hostOf(parsed) === '') throw new WebhookUrlRejectedError('URL has no host');
  // Nothing listens on port 0 (a connect to it fails at once): every delivery would fail.
  if (parsed.port === '0') throw new WebhookUrlRejectedError('port 0 cannot be connected to');
  return parsed;
}

/** URL.hostname without IPv6 brackets. */
export function hostOf(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

function isForbiddenHostname(host: string): boolean {
  const h = host.toLowerCase().replace(/\.+$/, '');
  return FORBIDDEN_HOSTNAMES.has(h) || h.endsWith('.localhost');
}

async function resolveAll(host: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('DNS lookup timed out')), DNS_TIMEOUT_MS);
  });
  try {
    // dns.lookup (getaddrinfo) rather than dns.resolve*: it is what the HTTP client will use, hosts file included.
    const found = await Promise.race([dns.lookup(host, { all: true, verbatim: true }), deadline]);
    return found.map((a) => a.address);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A new webhook URL's text: no space or control character anywhere. The URL parser drops tabs and newlines
 * and trims spaces, so the URL stored (as typed) and the one posted to would differ; a space inside one is not
 * a URL either (RFC 3986). For a URL being changed only: one stored before this rule can still be saved again
 * as it is (webhooks switched off with it), and is posted to as the parser reads it.
 */
export function assertWebhookUrlText(url: string): void {
  if (/[\u0000-\u0020\u007f]/.test(url)) throw new WebhookUrlRejectedError('URL must not contain spaces or control characters');
}

/**
 * Save-time check of a partner's webhook URL. Resolves A and AAAA and refuses when ANY address is forbidden
 * (a client may connect to any of them). With allowPrivate every resolvable http(s) URL is accepted.
 * Throws WebhookUrlRejectedError with a human `reason`.
 */
export async function assertWebhookUrlAllowed(url: string, opts: UrlGuardOptions): Promise<void> {
  const parsed = parseWebhookUrl(url, opts);
  const host = hostOf(parsed);

  if (isIP(host) !== 0) {
    if (opts.allowPrivate) return;
    const why = forbiddenAddressReason(host);
    if (why !== null) throw new WebhookUrlRejectedError(`host ${host} is ${why}`);
    return;
  }

  if (!opts.allowPrivate && isForbiddenHostname(host)) {
    throw new WebhookUrlRejectedError(`host ${host} is an internal name`);
  }

  let addresses: string[];
  try {
    addresses = await resolveAll(host);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new WebhookUrlRejectedError(`host ${host} does not resolve${code ? ` (${code})` : ''}`);
  }
  if (addresses.length === 0) throw new WebhookUrlRejectedError(`host ${host} does not resolve`);
  if (opts.allowPrivate) return;
  // Neither the address nor its kind is told: the refusal reaches partners (portal, API), and naming what an
  // internal name resolves to would let them map the service's network through its resolver.
  if (addresses.some((address) => forbiddenAddressReason(address) !== null)) {
    throw new WebhookUrlRejectedError(`host ${host} resolves to an address that is not public`);
  }
}
