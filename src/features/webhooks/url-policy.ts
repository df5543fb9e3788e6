// Which URLs a webhook may be sent to (docs/callers.md "Webhooks"). Checked when an endpoint is
// created or changed (422) and again before every attempt: a Worker that posts to
// whatever URL a caller names must not become a way into private networks. Only
// `https` to public hosts: no IP literal in a private, loopback, link-local,
// unique-local, shared, documentation, multicast or reserved range (IPv4, IPv6, and
// IPv4 embedded in IPv6), no `localhost`, `.local`, `.internal` or other names that
// only mean something inside a network, and no credentials in the URL. Local
// development (WEBHOOKS_ALLOW_LOOPBACK) may also use `http` to loopback addresses.
//
// Names are judged as names: a Worker has no DNS API to see what a public name
// resolves to. Outbound fetches from Cloudflare's edge reach only the public
// Internet, so a public name pointing at a private address reaches nothing private of
// this service.
import type { Env } from '../../env.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../../lib/limits.ts';

export interface UrlPolicy {
  /** Local development: http(s) to 127.0.0.0/8, ::1 and localhost too. */
  allowLoopback: boolean;
}

/** Which URLs this deployment sends to. */
export const urlPolicy = (env: Env): UrlPolicy => ({ allowLoopback: env.WEBHOOKS_ALLOW_LOOPBACK === 'true' });

/** Why `text` may not be a webhook URL under `policy`, or null when it may. */
export function webhookUrlProblem(text: string, policy: UrlPolicy): string | null {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) return `the URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'not an absolute URL';
  }
  if (url.username || url.password) return 'the URL may not carry credentials (user:password@): authenticate the request by its signature';
  if (url.hash) return 'the URL may not have a #fragment';
  const host = normalizedHost(url);
  if (host === null) return `${url.hostname} is not a valid host name (an empty label)`;
  const loopback = isLoopbackHost(host);
  if (policy.allowLoopback && loopback && (url.protocol === 'http:' || url.protocol === 'https:')) return null;
  if (url.protocol !== 'https:')
    return `only https URLs are accepted${policy.allowLoopback ? ' (or http to a loopback address in local development)' : ''}`;
  if (loopback) return `${host} is a loopback address${policy.allowLoopback ? '' : '; only public hosts are accepted'}`;
  const problem = host.startsWith('[') ? ipv6Problem(host.slice(1, -1)) : isIpv4(host) ? ipv4Problem(host) : nameProblem(host);
  return problem;
}

/**
 * The host as the policy judges it. WHATWG parsing has already normalized it: lower
 * case, IDNA names in their punycode (xn--) form, IPv4 in dotted form (0x7f.1 and
 * 2130706433 are 127.0.0.1), IPv6 in brackets and compressed. But it keeps a name's
 * trailing dots, and past one of them it does not read IPv4 at all (`10.0.0.1..` stays
 * a "name"), while resolvers drop them: so every trailing dot goes and what is left is
 * parsed again. Null for a name with an empty label (`a..b`), which names nothing.
 */
export function normalizedHost(url: URL): string | null {
  let host = url.hostname;
  if (host.startsWith('[')) return host;
  let end = host.length;
  while (end > 0 && host[end - 1] === '.') end--;
  if (end < host.length) {
    try {
      host = new URL(`https://${host.slice(0, end)}/`).hostname;
    } catch {
      return null;
    }
  }
  return host.split('.').includes('') ? null : host;
}

function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIpv4(host)) return host.startsWith('127.');
  if (host.startsWith('[')) {
    const v6 = parseIpv6(host.slice(1, -1));
    if (!v6) return false;
    if (v6.every((w, i) => w === (i === 7 ? 1 : 0))) return true;
    const v4 = embeddedIpv4(v6);
    return v4 !== null && v4[0] === 127;
  }
  return false;
}

const isIpv4 = (host: string) => /^\d{1,3}(\.\d{1,3}){3}$/.test(host);

/** Names that mean something only inside a network, or nothing at all. */
const PRIVATE_SUFFIXES = [
  '.local',
  '.internal',
  '.localdomain',
  '.lan',
  '.home',
  '.corp',
  '.intranet',
  '.private',
  '.home.arpa',
  '.test',
  '.invalid',
  '.example',
  '.onion',
];

function nameProblem(host: string): string | null {
  if (!host) return 'the URL has no host';
  if (!host.includes('.')) return `${host} is not a public host name (it has no domain)`;
  for (const suffix of PRIVATE_SUFFIXES)
    if (host.endsWith(suffix) || host === suffix.slice(1))
      return `${host} is a private or reserved name (${suffix}); only public hosts are accepted`;
  if (host.endsWith('.arpa')) return `${host} is a reverse-lookup name, not a host`;
  return null;
}

/** IPv4 ranges that are not public unicast (RFC 6890 and its successors). */
const IPV4_BLOCKED: [string, number, string][] = [
  ['0.0.0.0', 8, 'the "this network" range'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (carrier-grade NAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a 6to4 relay address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

const ipv4Number = (parts: number[]) => ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;

function ipv4BlockedReason(parts: number[]): string | null {
  const n = ipv4Number(parts);
  for (const [base, bits, what] of IPV4_BLOCKED) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if ((n & mask) >>> 0 === (ipv4Number(base.split('.').map(Number)) & mask) >>> 0) return what;
  }
  return null;
}

function ipv4Problem(host: string): string | null {
  const parts = host.split('.').map(Number);
  if (parts.some((p) => p > 255)) return `${host} is not an IPv4 address`;
  const what = ipv4BlockedReason(parts);
  return what ? `${host} is ${what}; only public hosts are accepted` : null;
}

/** The eight 16-bit words of an IPv6 address (as the URL parser prints it), or null. */
function parseIpv6(text: string): number[] | null {
  let s = text.toLowerCase();
  // A trailing dotted IPv4 part (the URL parser prints these in hex, but be safe).
  const dotted = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(s);
  if (dotted) {
    const p = dotted[2].split('.').map(Number);
    s = `${dotted[1]}${((p[0] << 8) | p[1]).toString(16)}:${((p[2] << 8) | p[3]).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const words = (h: string) => (h ? h.split(':').map((w) => (/^[0-9a-f]{1,4}$/.test(w) ? parseInt(w, 16) : NaN)) : []);
  const head = words(halves[0]);
  const tail = halves.length === 2 ? words(halves[1]) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? head.length !== 8 : fill < 1) return null;
  const all = [...head, ...Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return all.some(Number.isNaN) ? null : all;
}

/** The IPv4 address an IPv6 address stands for: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::/96), 6to4 (2002::/16). */
function embeddedIpv4(w: number[]): number[] | null {
  const v4 = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
  const zeros = (from: number, to: number) => w.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && w[5] === 0xffff) return v4(w[6], w[7]);
  if (zeros(0, 6) && (w[6] !== 0 || w[7] > 1)) return v4(w[6], w[7]);
  if (w[0] === 0x64 && w[1] === 0xff9b && zeros(2, 6)) return v4(w[6], w[7]);
  if (w[0] === 0x2002) return v4(w[1], w[2]);
  return null;
}

function ipv6Problem(text: string): string | null {
  const w = parseIpv6(text);
  if (!w) return `[${text}] is not an IPv6 address`;
  const bad = (what: string) => `[${text}] is ${what}; only public hosts are accepted`;
  if (w.every((x) => x === 0)) return bad('the unspecified address');
  const v4 = embeddedIpv4(w);
  if (v4) {
    const what = ipv4BlockedReason(v4);
    return what ? bad(`${what} (IPv4 ${v4.join('.')} inside IPv6)`) : null;
  }
  const first = w[0];
  if ((first & 0xfe00) === 0xfc00) return bad('a unique-local address');
  if ((first & 0xffc0) === 0xfe80) return bad('a link-local address');
  if ((first & 0xffc0) === 0xfec0) return bad('a site-local address');
  if ((first & 0xff00) === 0xff00) return bad('a multicast address');
  if (first === 0x2001 && w[1] === 0x0db8) return bad('a documentation address');
  if (first === 0x0100 && w[1] === 0 && w[2] === 0 && w[3] === 0) return bad('a discard-only address');
  // Global unicast is 2000::/3; everything else is reserved.
  if ((first & 0xe000) !== 0x2000) return bad('a reserved address');
  return null;
}
