import { checkS3Location, type S3Location } from '@auditlake/model';

export type { S3Location };

/**
 * Parses `s3://bucket[/prefix]`; undefined when the text is not such a URL or breaks the
 * tier-location rules (bad bucket name; empty, `.` or `..` prefix segments; control
 * characters). Settings are checked against the same rules when saved; this is the second
 * line, so no key built from a location can leave its bucket prefix.
 */
export function parseS3Location(url: string): S3Location | undefined {
  const check = checkS3Location(url.trim());
  return check.ok ? check.location : undefined;
}

/** `prefix/name`, or `name` at the bucket root. */
export function joinKey(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}/${name}`;
}
