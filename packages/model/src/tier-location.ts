/**
 * The rules a tier location must follow before it is saved: an `s3://bucket/prefix` whose
 * bucket is a valid S3 bucket name and whose prefix segments are plain names, and Iceberg
 * identifiers whose parts are plain identifiers. Tier keys are built by joining these with
 * `/`; a `..` segment or a `/` inside an Iceberg name would otherwise reach outside the
 * location the operator meant (on a file-backed endpoint, outside its data directory).
 */

/** The longest accepted key prefix, in UTF-8 bytes: tier keys add up to ~200 bytes, S3 keys end at 1024. */
export const TIER_PREFIX_BYTES_MAX = 512;

/** A namespace or table name: a letter or `_`, then letters, digits and `_`, at most this long. */
export const ICEBERG_NAME_LENGTH_MAX = 128;
const ICEBERG_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An `s3://bucket/prefix` location; `prefix` has no leading or trailing slash. */
export interface S3Location {
  bucket: string;
  prefix: string;
}

export type S3LocationCheck = { ok: true; location: S3Location } | { ok: false; problem: string };

/**
 * Why `name` is not a valid S3 bucket name (the general-purpose bucket rules), or undefined:
 * 3 to 63 characters of lower-case letters, digits, `.` and `-`, starting and ending with a
 * letter or digit, no `..`, not shaped like an IP address, none of the reserved prefixes and
 * suffixes.
 */
export function bucketNameProblem(name: string): string | undefined {
  if (name.length < 3 || name.length > 63) return `the bucket name '${name}' must have 3 to 63 characters`;
  if (!/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/.test(name)) return `the bucket name '${name}' may hold only lower-case letters, digits, '.' and '-', and must start and end with a letter or digit`;
  if (name.includes('..')) return `the bucket name '${name}' must not have two adjacent periods`;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return `the bucket name '${name}' must not be an IP address`;
  if (name.startsWith('xn--') || name.startsWith('sthree-')) return `the bucket name '${name}' must not start with xn-- or sthree-`;
  if (name.endsWith('-s3alias') || name.endsWith('--ol-s3')) return `the bucket name '${name}' must not end with -s3alias or --ol-s3`;
  return undefined;
}

/**
 * Why `prefix` (the part after `s3://bucket/`) is not a usable key prefix, or undefined. One
 * trailing `/` is allowed (a prefix is often written so) and dropped by the caller.
 */
export function keyPrefixProblem(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  if (!prefix.isWellFormed()) return 'the key prefix is not well-formed Unicode (it has a lone surrogate)';
  const control = /[\u0000-\u001f\u007f-\u009f]/.exec(prefix);
  if (control) return `the key prefix has a control character (U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')})`;
  if (prefix.includes('\\')) return "the key prefix has a '\\' (use '/' between segments)";
  if (Buffer.byteLength(prefix, 'utf8') > TIER_PREFIX_BYTES_MAX) return `the key prefix is longer than ${TIER_PREFIX_BYTES_MAX} bytes`;
  if (prefix.startsWith('/')) return "the key prefix must not start with '/' (write s3://bucket/prefix)";
  const segments = prefix.split('/');
  if (segments.at(-1) === '') segments.pop();
  for (const segment of segments) {
    if (segment === '') return "the key prefix has an empty segment (a doubled '/')";
    if (segment === '.' || segment === '..') return `the key prefix has a '${segment}' segment`;
    if (segment.trim() !== segment) return `the key prefix segment '${segment}' starts or ends with whitespace`;
  }
  return undefined;
}

/** Checks `s3://bucket[/prefix]` against the bucket and prefix rules above. */
export function checkS3Location(text: string): S3LocationCheck {
  if (!text.startsWith('s3://')) return { ok: false, problem: 'it must start with s3:// (s3://bucket/prefix)' };
  const rest = text.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const bucketProblem = bucketNameProblem(bucket);
  if (bucketProblem) return { ok: false, problem: bucketProblem };
  const rawPrefix = slash < 0 ? '' : rest.slice(slash + 1);
  const prefixProblem = keyPrefixProblem(rawPrefix);
  if (prefixProblem) return { ok: false, problem: prefixProblem };
  return { ok: true, location: { bucket, prefix: rawPrefix.endsWith('/') ? rawPrefix.slice(0, -1) : rawPrefix } };
}

/** Why `name` is not an Iceberg namespace or table name auditlake accepts, or undefined. */
export function icebergNameProblem(name: string, what: string): string | undefined {
  if (name === '') return `the ${what} name is empty`;
  if (name.length > ICEBERG_NAME_LENGTH_MAX) return `the ${what} name is longer than ${ICEBERG_NAME_LENGTH_MAX} characters`;
  if (!ICEBERG_NAME.test(name)) return `the ${what} name '${name}' may hold only letters, digits and '_', and must not start with a digit`;
  return undefined;
}

/**
 * Why `identifier` is not `catalog.schema.table` with three identifier parts, or undefined.
 * The schema and table become key segments (`<warehouse>/<schema>/<table>/`), so they are
 * held to the identifier rule; the catalog must name a configured catalog, checked elsewhere,
 * and is held to the same rule so it never needs quoting.
 */
export function icebergTableProblem(identifier: string): string | undefined {
  const parts = identifier.split('.');
  if (parts.length !== 3) return `it must be catalog.schema.table (three names separated by '.'), got ${parts.length} part${parts.length === 1 ? '' : 's'}`;
  const [catalog, schema, table] = parts as [string, string, string];
  return icebergNameProblem(catalog, 'catalog') ?? icebergNameProblem(schema, 'schema') ?? icebergNameProblem(table, 'table');
}
