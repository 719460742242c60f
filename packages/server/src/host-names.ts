import { isIP } from 'node:net';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/**
 * The Host names a node's open endpoints (`/health`, `/metrics`) answer to. They need no
 * credentials, so a web page that gets a browser to send requests to the node could read them:
 * with DNS rebinding, a name the page's site controls is made to resolve to 127.0.0.1 (or to a
 * node's private address), and the browser then sends the page's requests to the node as
 * same-origin ones, with `Host: <that name>`. Such a request names a host the node does not
 * know, so it is refused. Answered to:
 * - any IP address (v4, or v6 in brackets): a browser sends the name it resolved, never the
 *   address, so a rebound request cannot carry one; peers, probes and scrapers by address do;
 * - `localhost` and `*.localhost`, which browsers resolve to loopback themselves (RFC 6761);
 * - the node's own `--host` and the host of its advertised URL (peers and a proxy use those);
 * - the names in `auditlake.http.allowed.hosts`.
 * Routes that need credentials are not checked: a browser sends no `Authorization` header of
 * its own accord, so a rebound page holds none to send.
 */
export class HostNames {
  readonly #allowed: ReadonlySet<string>;
  readonly #configured: readonly string[];

  constructor(configured: readonly string[], ownHosts: readonly string[]) {
    this.#configured = configured;
    this.#allowed = new Set([...configured, ...ownHosts.map(normalizeName)].filter((name) => name !== '' && isIP(name) === 0));
  }

  /** The host name of a `Host` header (port and IPv6 brackets taken off, lower-cased, no trailing dot). */
  static nameOf(host: string): string {
    const trimmed = host.trim();
    if (trimmed.startsWith('[')) {
      const close = trimmed.indexOf(']');
      return close === -1 ? trimmed : trimmed.slice(1, close);
    }
    // An IPv6 address without brackets (not valid in a Host header, but unambiguous).
    if (isIP(trimmed) === 6) return trimmed;
    const colon = trimmed.lastIndexOf(':');
    return normalizeName(colon === -1 ? trimmed : trimmed.slice(0, colon));
  }

  allows(host: string | undefined): boolean {
    // Only HTTP/1.0 may leave Host out, and no browser sends HTTP/1.0.
    if (host === undefined) return true;
    const name = HostNames.nameOf(host);
    return isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost') || this.#allowed.has(name);
  }

  /** Throws AUDIT_HOST_NOT_ALLOWED for a Host this node does not answer `path` under. */
  check(host: string | undefined, path: string): void {
    if (this.allows(host)) return;
    const configured = this.#configured.length === 0 ? 'none' : this.#configured.join(', ');
    throw new AuditError(
      AuditErrorCode.HOST_NOT_ALLOWED,
      `${path} is not answered for Host ${JSON.stringify(host)}: it answers an IP address, localhost, this node's --host or advertised name, or a name in auditlake.http.allowed.hosts (now: ${configured}); a web page may be reaching this node through DNS rebinding — if the name is yours, add it to auditlake.http.allowed.hosts`,
    );
  }
}

function normalizeName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}
