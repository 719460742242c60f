/**
 * A Redis URL as it may be shown (the start line, an error): its password replaced by `***`.
 * The URL's password is the coordinator's, and whoever reads the coordinator holds the cluster
 * (README, "Security model"), so it never goes to standard output or a log. Read by hand, not
 * with URL: a string URL does not parse as intended (a space, a stray `@`) must not show its
 * password either.
 */
export function shownRedisUrl(url: string): string {
  const schemeEnd = url.indexOf('://');
  const authorityStart = schemeEnd < 0 ? 0 : schemeEnd + 3;
  const pathStart = url.indexOf('/', authorityStart);
  const authorityEnd = pathStart < 0 ? url.length : pathStart;
  const at = url.lastIndexOf('@', authorityEnd - 1);
  if (at < authorityStart) return withQueryPasswordsHidden(url, authorityStart);
  // user:password@host: the user stays (it names an account, not a secret); no colon: the
  // whole part before `@` may be a password and is hidden.
  const colon = url.indexOf(':', authorityStart);
  const userEnd = colon >= 0 && colon < at ? colon + 1 : authorityStart;
  return `${url.slice(0, userEnd)}***${withQueryPasswordsHidden(url.slice(at), 0)}`;
}

/**
 * ioredis takes every query parameter as a connection option (`redis://host:6379?password=…`
 * is a password, `sentinelPassword` the sentinels'): the value of each parameter whose name
 * holds "pass", in any case, is hidden. `from`: where the query may start (after the scheme).
 */
function withQueryPasswordsHidden(url: string, from: number): string {
  const queryStart = url.indexOf('?', from);
  if (queryStart < 0) return url;
  const parameters = url
    .slice(queryStart + 1)
    .split('&')
    .map((parameter) => {
      const equals = parameter.indexOf('=');
      return equals >= 0 && mayNamePassword(parameter.slice(0, equals)) ? `${parameter.slice(0, equals)}=***` : parameter;
    });
  return `${url.slice(0, queryStart + 1)}${parameters.join('&')}`;
}

/** Whether a query parameter's name, as ioredis decodes it (`p%61ss`, `+`), holds "pass"; one that does not decode is hidden too. */
function mayNamePassword(name: string): boolean {
  try {
    return /pass/i.test(decodeURIComponent(name.replace(/\+/g, ' ')));
  } catch {
    return true;
  }
}
