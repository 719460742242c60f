import { DEFAULT_REDACT_KEYS, Redactor } from '@auditlake/model';

/**
 * Query parameters whose values are credentials. Such values never reach a log line: a token in
 * a URL (which clients should never send, but some do) would otherwise be kept in every log
 * collector the node feeds. The key names ingest masks in audit text by default
 * (`audit.redact.keys`: `token`, `password`, `pwd`, `sig`, `X-Amz-Signature`, …, matched as
 * there) are credentials here too, so the two lists cannot drift apart. A log line can also
 * afford names that the audit text cannot, where masking a non-secret would destroy evidence:
 * these, by lower-case name with `-` and `_` removed, and names containing LOG_ONLY_WORDS.
 */
const AUDIT_KEYS = new Redactor(DEFAULT_REDACT_KEYS);
const LOG_ONLY_NAMES = new Set(['auth', 'key', 'jwt', 'session', 'sessionid', 'code', 'bearer', 'pass', 'pw', 'otp', 'totp']);
/** `client_assertion` (OAuth's signed client credential) and the like. */
const LOG_ONLY_WORDS = ['signature', 'assertion'];

export const REDACTED = '[REDACTED]';

function isCredentialName(rawName: string): boolean {
  let name: string;
  try {
    name = decodeURIComponent(rawName.replaceAll('+', ' '));
  } catch {
    name = rawName;
  }
  const plain = name.toLowerCase().replace(/[-_\s]/g, '');
  return AUDIT_KEYS.isSensitiveKey(name) || LOG_ONLY_NAMES.has(plain) || LOG_ONLY_WORDS.some((word) => plain.includes(word));
}

/**
 * `url` (a request target such as `/admin/audit?q=x&token=…`) with the value of every
 * credential-like query parameter replaced by `[REDACTED]`; everything else as it was.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const hash = url.indexOf('#', q);
  const query = hash === -1 ? url.slice(q + 1) : url.slice(q + 1, hash);
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      return eq !== -1 && isCredentialName(name) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
  return url.slice(0, q + 1) + redacted + (hash === -1 ? '' : url.slice(hash));
}
