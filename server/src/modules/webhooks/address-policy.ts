/**
 * Which addresses a webhook may reach, and which endpoint URLs are acceptable: pure.
 *
 * How it works: an IP address (v4 or v6 text) is parsed into bytes and classified. IPv4-mapped IPv6
 * (`::ffff:a.b.c.d`, in any spelling such as `::ffff:7f00:1`) is canonicalised to its IPv4 address
 * first, so `[::ffff:127.0.0.1]` is the loopback it connects to. IPv4 is checked against a deny list
 * (Svix's `is_allowed` list plus the cloud metadata addresses, RFC 6890). IPv6 is checked against an
 * allow list instead: only global unicast (2000::/3) passes, minus the special blocks inside it
 * (Teredo, 6to4, documentation, benchmarking, ORCHID), because those embed or reach IPv4 addresses
 * we could not check. NAT64 (64:ff9b::/96) is refused for the same reason.
 *
 * `WEBHOOK_ALLOW_PRIVATE_NETWORKS=1` (development and tests) lets loopback, private, link-local,
 * CGNAT and unique-local addresses through. Metadata services, unspecified, multicast and reserved
 * addresses stay refused even then: no development setup needs a webhook to fetch cloud credentials.
 *
 * The sender (sender.ts) resolves the host itself, classifies every address and connects only to an
 * address that passed, so DNS cannot answer differently between the check and the connection.
 */
import { isIPv4, isIPv6 } from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'unique_local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved'
  | 'nat64'
  | '6to4'
  | 'teredo';

/** What WEBHOOK_ALLOW_PRIVATE_NETWORKS=1 opens up. */
const PRIVATE_CLASSES: ReadonlySet<AddressClass> = new Set(['loopback', 'private', 'link_local', 'cgnat', 'unique_local']);

export interface AddressVerdict {
  allowed: boolean;
  class: AddressClass;
  /** The address that will be connected to: IPv4-mapped forms become plain IPv4. */
  canonical: string;
  family: 4 | 6;
}

interface Rule {
  bytes: number[];
  prefix: number;
  class: AddressClass;
}

function rule(cidr: string, cls: AddressClass): Rule {
  const [ip, bits] = cidr.split('/') as [string, string];
  const bytes = isIPv4(ip) ? ipv4Bytes(ip) : ipv6Bytes(ip);
  if (!bytes) throw new Error(`bad rule ${cidr}`);
  return { bytes, prefix: Number(bits), class: cls };
}

// Most specific first: the first match decides.
const IPV4_RULES: Rule[] = [
  rule('169.254.169.254/32', 'metadata'), // AWS, GCP, Azure, OpenStack instance metadata
  rule('169.254.170.2/32', 'metadata'), // AWS ECS task credentials
  rule('169.254.170.23/32', 'metadata'), // AWS EKS pod identity
  rule('100.100.100.200/32', 'metadata'), // Alibaba Cloud
  rule('192.0.0.192/32', 'metadata'), // Oracle Cloud
  rule('255.255.255.255/32', 'broadcast'),
  rule('0.0.0.0/8', 'unspecified'),
  rule('10.0.0.0/8', 'private'),
  rule('100.64.0.0/10', 'cgnat'),
  rule('127.0.0.0/8', 'loopback'),
  rule('169.254.0.0/16', 'link_local'),
  rule('172.16.0.0/12', 'private'),
  rule('192.0.0.0/24', 'reserved'), // IETF protocol assignments
  rule('192.0.2.0/24', 'documentation'),
  rule('192.88.99.0/24', 'reserved'), // 6to4 relay anycast (deprecated)
  rule('192.168.0.0/16', 'private'),
  rule('198.18.0.0/15', 'benchmarking'),
  rule('198.51.100.0/24', 'documentation'),
  rule('203.0.113.0/24', 'documentation'),
  rule('224.0.0.0/4', 'multicast'),
  rule('240.0.0.0/4', 'reserved'),
];

const IPV6_RULES: Rule[] = [
  rule('::/128', 'unspecified'),
  rule('::1/128', 'loopback'),
  rule('fd00:ec2::254/128', 'metadata'), // AWS instance metadata over IPv6
  rule('64:ff9b::/96', 'nat64'),
  rule('64:ff9b:1::/48', 'nat64'),
  rule('fc00::/7', 'unique_local'),
  rule('fe80::/10', 'link_local'),
  rule('fec0::/10', 'unique_local'), // deprecated site-local: private in practice
  rule('ff00::/8', 'multicast'),
  rule('2001::/32', 'teredo'),
  rule('2001:2::/48', 'benchmarking'),
  rule('2001:10::/28', 'reserved'), // ORCHID
  rule('2001:20::/28', 'reserved'), // ORCHIDv2
  rule('2001:db8::/32', 'documentation'),
  rule('3fff::/20', 'documentation'),
  rule('2002::/16', '6to4'),
];
const GLOBAL_UNICAST = rule('2000::/3', 'public');

/** Classify an IP address; null when `address` is not an IP address at all. */
export function classifyAddress(address: string, options: { allowPrivateNetworks: boolean }): AddressVerdict | null {
  const text = stripBrackets(address);
  if (isIPv4(text)) return verdict(classifyV4(ipv4Bytes(text)!), text, 4, options);
  if (!isIPv6(text)) return null;
  const bytes = ipv6Bytes(text);
  if (!bytes) return null;
  const mapped = mappedIPv4(bytes);
  if (mapped) {
    const v4 = mapped.join('.');
    return verdict(classifyV4(mapped), v4, 4, options);
  }
  return verdict(classifyV6(bytes), formatV6(bytes), 6, options);
}

function verdict(cls: AddressClass, canonical: string, family: 4 | 6, options: { allowPrivateNetworks: boolean }): AddressVerdict {
  const allowed = cls === 'public' || (options.allowPrivateNetworks && PRIVATE_CLASSES.has(cls));
  return { allowed, class: cls, canonical, family };
}

function classifyV4(bytes: number[]): AddressClass {
  return IPV4_RULES.find((r) => matches(bytes, r))?.class ?? 'public';
}

function classifyV6(bytes: number[]): AddressClass {
  const hit = IPV6_RULES.find((r) => matches(bytes, r));
  if (hit) return hit.class;
  // Allow list: anything outside global unicast (IPv4-compatible ::/96, discard-only 100::/64,
  // unassigned space) is not an address a public receiver can have.
  return matches(bytes, GLOBAL_UNICAST) ? 'public' : 'reserved';
}

function matches(bytes: number[], r: Rule): boolean {
  if (bytes.length !== r.bytes.length) return false;
  let bits = r.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (r.bytes[i]! & mask)) return false;
  }
  return true;
}

function stripBrackets(address: string): string {
  const s = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  // A zone id (fe80::1%eth0) names an interface, not an address: classify the address.
  const zone = s.indexOf('%');
  return zone >= 0 ? s.slice(0, zone) : s;
}

function ipv4Bytes(text: string): number[] | null {
  if (!isIPv4(text)) return null;
  return text.split('.').map(Number);
}

/** 16 bytes of an IPv6 address in any valid spelling (`::`, embedded dotted IPv4 tail). */
export function ipv6Bytes(text: string): number[] | null {
  let s = stripBrackets(text);
  if (!isIPv6(s)) return null;
  const tail = s.slice(s.lastIndexOf(':') + 1);
  if (tail.includes('.')) {
    const v4 = ipv4Bytes(tail);
    if (!v4) return null;
    s = `${s.slice(0, s.length - tail.length)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  const out: number[] = [];
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    out.push(n >> 8, n & 0xff);
  }
  return out.length === 16 ? out : null;
}

/** ::ffff:0:0/96, the IPv4-mapped block: the embedded IPv4 bytes, else null. */
function mappedIPv4(bytes: number[]): number[] | null {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return null;
  if (bytes[10] !== 0xff || bytes[11] !== 0xff) return null;
  return bytes.slice(12);
}

function formatV6(bytes: number[]): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups.join(':');
}

// ---------------------------------------------------------------------------------------------
// Endpoint URLs (decisions.md section 9)

export const MAX_URL_LENGTH = 2048;

export type UrlCheck = { ok: true; url: string } | { ok: false; problem: string };

/**
 * An endpoint URL must be https, at most 2,048 characters, without user-info or fragment. An IP
 * literal host is classified now so an obviously private target is refused at creation; a host
 * name is checked at every delivery, when it is resolved (its addresses can change).
 */
export function checkEndpointUrl(raw: string, options: { allowPrivateNetworks: boolean }): UrlCheck {
  if (typeof raw !== 'string' || raw.length === 0) return { ok: false, problem: 'url is required' };
  if (raw.length > MAX_URL_LENGTH) return { ok: false, problem: `url must be at most ${MAX_URL_LENGTH} characters` };
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) return { ok: false, problem: 'url must not contain white space or control characters' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, problem: 'url is not a valid absolute URL' };
  }
  if (url.protocol !== 'https:') return { ok: false, problem: 'url must use https (plain HTTP is refused)' };
  if (url.username !== '' || url.password !== '' || /^https:\/\/[^/?#]*@/i.test(raw)) return { ok: false, problem: 'url must not contain user-info (user:password@)' };
  if (url.hash !== '' || raw.includes('#')) return { ok: false, problem: 'url must not contain a fragment (#...)' };
  if (url.hostname === '') return { ok: false, problem: 'url must name a host' };
  const literal = classifyAddress(url.hostname, options);
  if (literal && !literal.allowed) return { ok: false, problem: `url points to a ${literal.class.replace('_', '-')} address, which webhooks may not reach` };
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (!options.allowPrivateNetworks && (host === 'localhost' || host.endsWith('.localhost'))) {
    return { ok: false, problem: 'url points to localhost, which webhooks may not reach' };
  }
  if (url.href.length > MAX_URL_LENGTH) return { ok: false, problem: `url must be at most ${MAX_URL_LENGTH} characters` };
  return { ok: true, url: url.href };
}
