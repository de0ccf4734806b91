import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';

/**
 * Who may have webhooks delivered to private addresses (loopback, private networks, link-local, cloud metadata):
 * `admins` (default), `all` (one trusted team) or `none`. A webhook is posted by the server, from inside its
 * network: without this rule any user could make it reach internal services and read, in the delivery log, which
 * ports answer.
 */
export type PrivateTargets = 'admins' | 'all' | 'none';

export function mayReachPrivate(policy: PrivateTargets, isAdmin: boolean): boolean {
  return policy === 'all' || (policy === 'admins' && isAdmin);
}

/** Addresses a server must not be made to reach on a user's behalf (IANA special-purpose registries). */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback, and IPv4-compatible ::a.b.c.d (which reaches that IPv4 address)
  ['::ffff:0:0:0', 96], // IPv4-translated
  ['64:ff9b::', 96], // NAT64: reaches any IPv4 address, private ones included, through the gateway
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 32], // Teredo: tunnels to an IPv4 address
  ['2002::', 16], // 6to4: likewise
  ['fc00::', 7], // unique local
  ['fec0::', 10], // site-local (deprecated, still routed on some networks)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/** Whether `address` (an IP literal) is loopback, private, link-local or otherwise not a public unicast address. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return PRIVATE.check(bare, 'ipv4');
  if (family !== 6) return false;
  // An IPv4-mapped address (::ffff:10.0.0.1, ::ffff:a00:1) reaches that IPv4 address: judged as one. (The other
  // IPv6 forms that carry an IPv4 address are blocked whole above.)
  const embedded = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  if (embedded !== undefined) return PRIVATE.check(embedded, 'ipv4');
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(bare);
  if (hex) {
    const n = (parseInt(hex[1]!, 16) << 16) | parseInt(hex[2]!, 16);
    return PRIVATE.check([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'), 'ipv4');
  }
  return PRIVATE.check(bare, 'ipv6');
}

/**
 * The reason a webhook URL names a private target by itself, without a DNS lookup: an IP literal in a private range
 * or, with `names`, localhost. Null when it does not. (A name is checked for good when the connection resolves it.)
 */
export function privateLiteral(url: URL, names = false): string | null {
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (names && (host === 'localhost' || host.endsWith('.localhost'))) return `${host} is the server itself`;
  if (isPrivateAddress(host)) return `${host} is a private, loopback or link-local address`;
  return null;
}

/**
 * Ports that browsers' fetch refuses ("bad ports": mail, shell, IRC, …): a POST of a job's JSON there is never a
 * webhook receiver, only a way to speak to another protocol's server. Deliveries used fetch before, so refusing them
 * keeps what worked.
 */
const BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** The reason a webhook URL's port is refused, or null. */
export function blockedPort(url: URL): string | null {
  if (url.port === '' || !BAD_PORTS.has(Number(url.port))) return null;
  return `port ${url.port} is not a webhook receiver's (it is refused like fetch's blocked ports)`;
}

/** A target refused for good (its delivery fails at once, no retry). */
export class BlockedTargetError extends Error {
  readonly code: string = 'BLOCKED_TARGET';
}

export class PrivateTargetError extends BlockedTargetError {
  override readonly code: string = 'PRIVATE_TARGET';
  constructor(why: string) {
    super(
      `${why}; webhooks to such addresses are sent for admin users only, unless WHARF_WEBHOOK_PRIVATE_TARGETS says otherwise`,
    );
  }
}

/**
 * Why a webhook may not go to `url`, as far as the URL itself says: a blocked port, or (`publicOnly`) a private IP
 * literal, and localhost too with `names`. Null when it may; a host name is checked again when it is resolved.
 * The submission check and the delivery both ask this.
 */
export function refusal(url: URL, publicOnly: boolean, names = false): BlockedTargetError | null {
  const port = blockedPort(url);
  if (port !== null) return new BlockedTargetError(port);
  const literal = publicOnly ? privateLiteral(url, names) : null;
  return literal === null ? null : new PrivateTargetError(literal);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets (node:net) that refuses host names resolving to a private address. The check is on the
 * addresses the connection then uses, so a name that resolves differently on a second look (DNS rebinding) cannot
 * slip past. Any private address in the answer refuses the name.
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, []);
      return;
    }
    if (addresses.length === 0) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    if (addresses.some((a) => isPrivateAddress(a.address))) {
      callback(new PrivateTargetError(`${hostname} resolves to a private, loopback or link-local address`), []);
      return;
    }
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

// Connections are reused, but an idle one is closed after a few seconds: a receiver that never closes its end must
// not hold a socket (and a file descriptor) of the server for good.
const POOL = { keepAlive: true, timeout: 5_000, maxFreeSockets: 64 };
const agents = {
  any: { http: new HttpAgent(POOL), https: new HttpsAgent(POOL) },
  publicOnly: {
    http: new HttpAgent({ ...POOL, lookup: publicOnlyLookup }),
    https: new HttpsAgent({ ...POOL, lookup: publicOnlyLookup }),
  },
};

export interface WebhookPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  /** Refuse private targets: an IP literal at once, a host name when it resolves to one. */
  publicOnly: boolean;
}

/**
 * POST a webhook once and resolve with the answer's status code. Redirects are never followed (node:http does not),
 * so a receiver cannot bounce the signed payload elsewhere; the answer's body is drained, not read.
 */
export function postWebhook(p: WebhookPost): Promise<number> {
  const url = new URL(p.url);
  const refused = refusal(url, p.publicOnly);
  if (refused !== null) return Promise.reject(refused);
  const https = url.protocol === 'https:';
  const pool = p.publicOnly ? agents.publicOnly : agents.any;
  return new Promise<number>((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      url,
      {
        method: 'POST',
        headers: { ...p.headers, 'content-length': String(Buffer.byteLength(p.body)) },
        signal: p.signal,
        agent: https ? pool.https : pool.http,
      },
      (res) => {
        res.on('error', () => {}); // cut off after the status was read: nothing left to report
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(p.body);
  });
}
