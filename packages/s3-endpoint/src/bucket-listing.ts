import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { OBJECT_SUFFIX } from './object-files.js';

/** S3 answers at most this many keys and common prefixes per listing request. */
export const LISTING_KEYS_MAX = 1000;

/** S3's key order: by UTF-8 bytes, which is code point order (JS `<` compares UTF-16 units). */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export interface ListingRequest {
  prefix: string;
  delimiter: string;
  /** Only keys after this one (exclusive). */
  startAfter: string;
  /** Set when resuming after a common prefix: keys under it were already answered. */
  skipPrefix?: string;
  maxKeys: number;
}

export type ListingEntry = { kind: 'key'; key: string } | { kind: 'prefix'; prefix: string };

export interface ListingPage {
  entries: ListingEntry[];
  /** The last entry answered, when more follow: where the next page starts. */
  resumeAfter: ListingEntry | undefined;
}

/**
 * Yields the keys stored under `directory` in S3 order, skipping directories that cannot hold
 * a key in scope. Sorting each directory's entries by the key text they stand for (`name` for
 * an object, `name/` for a directory) gives exactly the order of the full keys, so no listing
 * ever has to read the whole bucket.
 */
async function* keysInOrder(directory: string, keyPrefix: string, scope: { prefix: string; after: string }): AsyncGenerator<string> {
  let names;
  try {
    names = await readdir(directory, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const items: Array<{ key: string; name: string; isDirectory: boolean }> = [];
  for (const entry of names) {
    if (entry.isDirectory()) items.push({ key: `${keyPrefix}${entry.name}/`, name: entry.name, isDirectory: true });
    else if (entry.isFile() && entry.name.endsWith(OBJECT_SUFFIX)) items.push({ key: keyPrefix + entry.name.slice(0, -OBJECT_SUFFIX.length), name: entry.name, isDirectory: false });
  }
  items.sort((a, b) => compareKeys(a.key, b.key));
  for (const item of items) {
    if (item.isDirectory) {
      // Every key below starts with item.key.
      if (!item.key.startsWith(scope.prefix) && !scope.prefix.startsWith(item.key)) continue;
      if (compareKeys(item.key, scope.after) <= 0 && !scope.after.startsWith(item.key)) continue;
      yield* keysInOrder(join(directory, item.name), item.key, scope);
    } else if (item.key.startsWith(scope.prefix) && compareKeys(item.key, scope.after) > 0) {
      yield item.key;
    }
  }
}

/**
 * One page of a bucket listing (ListObjects V1 and V2): keys under `prefix` after
 * `startAfter`, rolled up into common prefixes at `delimiter`, at most `maxKeys` entries.
 */
export async function listBucketPage(bucketDirectory: string, request: ListingRequest): Promise<ListingPage> {
  const entries: ListingEntry[] = [];
  let lastPrefix: string | undefined;
  for await (const key of keysInOrder(bucketDirectory, '', { prefix: request.prefix, after: request.startAfter })) {
    if (request.skipPrefix !== undefined && key.startsWith(request.skipPrefix)) continue;
    let entry: ListingEntry = { kind: 'key', key };
    if (request.delimiter !== '') {
      const at = key.indexOf(request.delimiter, request.prefix.length);
      if (at >= 0) {
        const prefix = key.slice(0, at + request.delimiter.length);
        // Keys sharing a prefix are contiguous in key order: one entry for the run.
        if (prefix === lastPrefix) continue;
        lastPrefix = prefix;
        entry = { kind: 'prefix', prefix };
      }
    }
    if (entries.length === request.maxKeys) return { entries, resumeAfter: entries.at(-1) };
    entries.push(entry);
  }
  return { entries, resumeAfter: undefined };
}

/** An opaque continuation token for the entry a page ended with. */
export function continuationToken(entry: ListingEntry): string {
  return Buffer.from(JSON.stringify(entry.kind === 'key' ? ['k', entry.key] : ['p', entry.prefix]), 'utf8').toString('base64url');
}

/** The entry a continuation token stands for, or undefined when it is not one of ours. */
export function parseContinuationToken(token: string): ListingEntry | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 2 || typeof value[1] !== 'string') return undefined;
    if (value[0] === 'k') return { kind: 'key', key: value[1] };
    if (value[0] === 'p') return { kind: 'prefix', prefix: value[1] };
    return undefined;
  } catch {
    return undefined;
  }
}
