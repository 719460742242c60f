/**
 * Query parameters whose values are credentials, by lower-case name with `-` and `_` removed;
 * names containing one of CREDENTIAL_WORDS are credentials too. Such values never reach a log
 * line: a token in a URL (which clients should never send, but some do) would otherwise be
 * kept in every log collector the node feeds.
 */
const CREDENTIAL_NAMES = new Set(['token', 'accesstoken', 'idtoken', 'refreshtoken', 'auth', 'authorization', 'apikey', 'key', 'secret', 'password', 'passwd', 'pwd', 'jwt', 'sig', 'signature', 'credential', 'credentials', 'session', 'sessionid', 'code']);
const CREDENTIAL_WORDS = ['token', 'secret', 'password', 'signature', 'credential', 'apikey', 'accesskey'];

export const REDACTED = '[REDACTED]';

function isCredentialName(rawName: string): boolean {
  let name: string;
  try {
    name = decodeURIComponent(rawName.replaceAll('+', ' '));
  } catch {
    name = rawName;
  }
  const plain = name.toLowerCase().replace(/[-_\s]/g, '');
  return CREDENTIAL_NAMES.has(plain) || CREDENTIAL_WORDS.some((word) => plain.includes(word));
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
