import { S3Failure } from './s3-failure.js';

/** What a request names, read from its raw target exactly once, so every later step agrees. */
export interface RequestTarget {
  /** The path as sent, before the `?`. */
  rawPath: string;
  /** Undefined for the service root (`/`). */
  bucket: string | undefined;
  /** Undefined for a bucket-level request (`/bucket` or `/bucket/`). */
  key: string | undefined;
  /** Decoded query parameters in the order sent. */
  query: Array<[name: string, value: string]>;
}

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new S3Failure(400, 'InvalidURI', `the ${what} is not valid percent-encoded UTF-8`);
  }
}

/**
 * Parses a request target (`/bucket/key?query`). Only origin-form targets are accepted, and
 * the path is never normalised: `/b/x/../y` names the key `x/../y` (which the key rule then
 * refuses), never `y`.
 */
export function parseRequestTarget(url: string): RequestTarget {
  if (!url.startsWith('/') || url.includes('#')) throw new S3Failure(400, 'InvalidURI', 'the request target must be a path starting with /');
  const mark = url.indexOf('?');
  const rawPath = mark < 0 ? url : url.slice(0, mark);
  const rawQuery = mark < 0 ? '' : url.slice(mark + 1);
  const rest = rawPath.slice(1);
  const slash = rest.indexOf('/');
  const rawBucket = slash < 0 ? rest : rest.slice(0, slash);
  const rawKey = slash < 0 ? '' : rest.slice(slash + 1);
  const query: Array<[string, string]> = [];
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    query.push([decode(eq < 0 ? part : part.slice(0, eq), 'query'), eq < 0 ? '' : decode(part.slice(eq + 1), 'query')]);
  }
  return {
    rawPath,
    bucket: rawBucket === '' ? undefined : decode(rawBucket, 'bucket name'),
    key: rawKey === '' ? undefined : decode(rawKey, 'object key'),
    query,
  };
}

/** RFC 3986 percent-encoding of everything but unreserved characters, as SigV4 requires. */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A key or prefix encoded for a URL path: each segment encoded, the slashes kept. */
export function encodePath(text: string): string {
  return text.split('/').map(uriEncode).join('/');
}
