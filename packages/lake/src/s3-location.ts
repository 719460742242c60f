/** An `s3://bucket/prefix` location; `prefix` has no leading or trailing slash. */
export interface S3Location {
  bucket: string;
  prefix: string;
}

/** Parses `s3://bucket[/prefix]`; undefined when the text is not such a URL. */
export function parseS3Location(url: string): S3Location | undefined {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(\/.*)?$/.exec(url.trim());
  if (!match) return undefined;
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  return { bucket: match[1] as string, prefix };
}

/** `prefix/name`, or `name` at the bucket root. */
export function joinKey(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}/${name}`;
}
