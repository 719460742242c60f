import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * s3rver's on-disk layout, which this endpoint writes and s3rver reads back: key `a/b/c` of
 * bucket `bk` is `<root>/bk/a/b/c._S3rver_object`, with `c._S3rver_object.md5` (the ETag) and
 * `c._S3rver_metadata.json` (the stored headers) beside it. s3rver is pinned to 3.7.1, whose
 * layout this is; the round-trip tests fail if it changes.
 */
export const OBJECT_SUFFIX = '._S3rver_object';
const MD5_SUFFIX = '._S3rver_object.md5';
const METADATA_SUFFIX = '._S3rver_metadata.json';

/** The headers s3rver keeps with an object and returns on GET and HEAD. */
const STORED_HEADERS = ['cache-control', 'content-disposition', 'content-encoding', 'content-language', 'content-type', 'expires'];

function objectPaths(root: string, bucket: string, key: string) {
  const segments = key.split('/');
  const name = segments.pop()!;
  const directory = join(root, bucket, ...segments);
  return {
    directory,
    object: join(directory, name + OBJECT_SUFFIX),
    md5: join(directory, name + MD5_SUFFIX),
    metadata: join(directory, name + METADATA_SUFFIX),
  };
}

/** What s3rver stores of a PUT's headers: the content headers and `x-amz-meta-*`. */
export function storedMetadata(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = { 'content-type': 'binary/octet-stream' };
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') continue;
    if (STORED_HEADERS.includes(name) || name.startsWith('x-amz-meta-')) kept[name] = value;
  }
  return kept;
}

async function writeReplacing(path: string, text: string): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, path);
}

/**
 * Moves a staged, verified body into place as `key`. The object file is renamed in last, so a
 * reader sees the old object or the new one, never a partial file; the caller serialises
 * writes. No fsync: this endpoint is for development and tests, and tiered events stay in the
 * local store for days after their files are written.
 */
export async function placeObject(root: string, bucket: string, key: string, stagedPath: string, md5Hex: string, metadata: Record<string, string>): Promise<void> {
  const paths = objectPaths(root, bucket, key);
  await mkdir(paths.directory, { recursive: true });
  await writeReplacing(paths.md5, md5Hex);
  await writeReplacing(paths.metadata, JSON.stringify(metadata, null, 2));
  await rename(stagedPath, paths.object);
}

export async function objectExists(root: string, bucket: string, key: string): Promise<boolean> {
  try {
    return (await stat(objectPaths(root, bucket, key).object)).isFile();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw err;
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
  }
}

/** Deletes `key` (nothing when absent) and the directories it leaves empty, up to the bucket's. */
export async function removeObject(root: string, bucket: string, key: string): Promise<void> {
  const paths = objectPaths(root, bucket, key);
  await unlinkIfPresent(paths.object);
  await unlinkIfPresent(paths.md5);
  await unlinkIfPresent(paths.metadata);
  const bucketDirectory = join(root, bucket);
  for (let directory = paths.directory; directory !== bucketDirectory && directory.startsWith(bucketDirectory); directory = dirname(directory)) {
    try {
      if ((await readdir(directory)).length > 0) return;
      await rmdir(directory);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') continue;
      if (code === 'ENOTEMPTY') return;
      throw err;
    }
  }
}
