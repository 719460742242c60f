/**
 * Random-access bytes: the two-method I/O abstraction the readers work over (exactly
 * hyparquet's `AsyncBuffer`). A whole file in memory, an HTTP range reader and an S3
 * `GetObject` with `Range` all fit it, so the decoding code never knows where bytes live.
 */
export interface ByteSource {
  /** Total length of the object in bytes; it must be exact, readers find the footer with it. */
  byteLength: number;
  /** Bytes [start, end) (end defaults to byteLength), as a fresh ArrayBuffer. */
  slice(start: number, end?: number): Promise<ArrayBuffer> | ArrayBuffer;
}

/** A ByteSource over bytes already in memory. The caller must not change `bytes` afterwards. */
export function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    byteLength: bytes.byteLength,
    slice(start: number, end: number = bytes.byteLength): ArrayBuffer {
      // A copy, not a view: hyparquet may keep the buffer, and `bytes` may be a view into a
      // larger (or shared) buffer that must not leak out.
      const copy = new Uint8Array(Math.max(0, Math.min(end, bytes.byteLength) - start));
      copy.set(bytes.subarray(start, start + copy.byteLength));
      return copy.buffer;
    },
  };
}

/** A ByteSource that counts what was fetched through it. */
export interface CountingSource extends ByteSource {
  /** Bytes returned by `slice` so far. */
  readonly fetchedBytes: number;
  /** Number of `slice` calls so far (one per range request over a network). */
  readonly fetchCount: number;
}

/**
 * Wraps `inner` and counts the bytes and requests fetched through it, so a test can prove
 * that a read fetched only the byte ranges it needed (pushdown) rather than the whole object.
 */
export function countingSource(inner: ByteSource): CountingSource {
  let fetchedBytes = 0;
  let fetchCount = 0;
  const count = (buffer: ArrayBuffer): ArrayBuffer => {
    fetchedBytes += buffer.byteLength;
    return buffer;
  };
  return {
    byteLength: inner.byteLength,
    get fetchedBytes() {
      return fetchedBytes;
    },
    get fetchCount() {
      return fetchCount;
    },
    slice(start: number, end?: number) {
      fetchCount += 1;
      const result = inner.slice(start, end);
      return result instanceof ArrayBuffer ? count(result) : result.then(count);
    },
  };
}

/**
 * Remembers every range it fetched, so reading a file's footer (and any chunk) again —
 * once per row group a reader visits — costs no second request.
 */
export function memoizedSource(inner: ByteSource): ByteSource {
  const fetched = new Map<string, Promise<ArrayBuffer>>();
  return {
    byteLength: inner.byteLength,
    slice(start: number, end?: number) {
      const key = `${start}:${end ?? ''}`;
      let hit = fetched.get(key);
      if (!hit) {
        hit = Promise.resolve(inner.slice(start, end));
        fetched.set(key, hit);
      }
      return hit;
    },
  };
}
