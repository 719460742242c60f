// What a bucket's directory (s3rver's file store, under the embedded endpoint) holds, byte by byte.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { constants as zlibConstants, inflateRawSync } from 'node:zlib';

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out;
}

const GZIP_MAGIC = Buffer.from([0x1f, 0x8b, 0x08]);

/**
 * The bytes of a file as stored and, after them, every GZIP stream found in it inflated (the
 * tier's Parquet pages are GZIP-compressed: a value in them is not in the raw bytes as text).
 */
function searchableBytes(raw: Buffer): Buffer {
  const parts = [raw];
  for (let at = raw.indexOf(GZIP_MAGIC); at >= 0; at = raw.indexOf(GZIP_MAGIC, at + 1)) {
    try {
      // The deflate stream after the 10-byte GZIP header (Node's gunzip refuses bytes after a member).
      parts.push(inflateRawSync(raw.subarray(at + 10), { finishFlush: zlibConstants.Z_SYNC_FLUSH }));
    } catch {
      // Not a stream that starts here (the magic bytes by chance): nothing to add.
    }
  }
  return Buffer.concat(parts);
}

/**
 * The files under `dir` whose bytes (raw, or inflated from GZIP pages) hold `text` (UTF-8),
 * searched without its first 4 characters: a string column's encoding may share a prefix with
 * the value before it.
 */
export async function filesHolding(dir: string, text: string): Promise<string[]> {
  const needle = Buffer.from(text.slice(4), 'utf8');
  const holding: string[] = [];
  for (const path of await filesUnder(dir)) if (searchableBytes(await readFile(path)).includes(needle)) holding.push(path);
  return holding;
}
