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
  if (at < authorityStart) return url;
  // user:password@host: the user stays (it names an account, not a secret); no colon: the
  // whole part before `@` may be a password and is hidden.
  const colon = url.indexOf(':', authorityStart);
  const userEnd = colon >= 0 && colon < at ? colon + 1 : authorityStart;
  return `${url.slice(0, userEnd)}***${url.slice(at)}`;
}
