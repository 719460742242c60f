import { AuditError, AuditErrorCode } from '@auditlake/model';
import { gunzipSync, gzipSync } from 'node:zlib';
import { snappyUncompress, type Compressors } from 'hyparquet';

/**
 * The codec of every page a tier file holds: GZIP, compressed and decompressed by Node's
 * native zlib. Against DuckDB writing the same 5,000 rows with ZSTD (its best codec here):
 * SNAPPY, the codec before, came out at 1.45× DuckDB's bytes; GZIP at 0.85–1.09× (by level).
 * ZSTD itself is not native on Node 20: a WebAssembly build compressed no smaller than GZIP
 * level 3 and inflated several times slower than native gunzip, a cost every tiered search
 * would pay. Every Parquet and Iceberg reader (Trino, Spark, DuckDB, icebird) reads GZIP.
 */
export const TIER_PAGE_CODEC = 'GZIP';

/**
 * Level 2. The encoder's time is most of a sweep commit's CPU, and higher levels cost more time
 * than they save bytes. Against DuckDB's ZSTD bytes for the same rows: level 1 ≈ 1.09× (too
 * close to the 1.1× we allow), level 2 ≈ 1.03×, level 3 ≈ 0.98×, level 6 ≈ 0.85× at about
 * 2.5× level 1's time. The bench's tiering part measures bytes and time against DuckDB.
 */
export const TIER_GZIP_LEVEL = 2;

/** The writer's compressor for {@link TIER_PAGE_CODEC}. */
export function compressTierPage(bytes: Uint8Array): Uint8Array {
  return gzipSync(bytes, { level: TIER_GZIP_LEVEL });
}

/**
 * Inflates a GZIP page (the reader's decompressor and the free-text prefilter both use it) to
 * the size its page header declares (at most {@link PAGE_DECLARED_BYTES_MAX}), and no further: a
 * page of half a megabyte inflated to 512 MiB before anything compared the length (review: a
 * bucket writer's gzip bomb). A page that inflates to any other size, or not at all, is refused
 * with AUDIT_TABLE_INVALID.
 */
export function decompressGzipPage(bytes: Uint8Array, declaredBytes: number): Uint8Array {
  checkDeclaredPageBytes('GZIP', declaredBytes);
  let inflated: Uint8Array;
  try {
    // One byte more than declared: a page that inflates beyond it is told apart from one that fits.
    inflated = gunzipSync(bytes, { maxOutputLength: Math.max(1, declaredBytes + 1) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw pageRefused(`a GZIP page inflates beyond the ${declaredBytes} bytes its header declares`);
    throw pageRefused(`a GZIP page does not inflate: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (inflated.byteLength !== declaredBytes) throw pageRefused(`a GZIP page inflates to ${inflated.byteLength} bytes, its header declares ${declaredBytes}`);
  return inflated;
}

/**
 * Most bytes a page may declare uncompressed: its decompression allocates that much. The size is
 * in the page header, which whoever wrote the file wrote too: bounding the inflated bytes by it
 * alone let a page declare 2 GiB and inflate to it (second review). Writers keep pages small
 * (ours 128 KiB, Trino's and Spark's 1 MiB); a page grows past that only around one huge value,
 * and an event is at most a request body (`auditlake.http.body.limit.bytes`, 8 MiB by default):
 * this leaves room for a limit sixteen times that.
 */
export const PAGE_DECLARED_BYTES_MAX = 128 * 1024 * 1024;

function pageRefused(message: string): AuditError {
  return new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file is not readable Parquet: ${message}`);
}

/** Throws AUDIT_TABLE_INVALID unless `declaredBytes` is a size a page may declare ({@link PAGE_DECLARED_BYTES_MAX} at most). */
export function checkDeclaredPageBytes(codec: string, declaredBytes: number): void {
  if (!Number.isSafeInteger(declaredBytes) || declaredBytes < 0) throw pageRefused(`a ${codec} page declares ${declaredBytes} bytes uncompressed`);
  if (declaredBytes > PAGE_DECLARED_BYTES_MAX) throw pageRefused(`a ${codec} page declares ${declaredBytes} bytes uncompressed, more than the ${PAGE_DECLARED_BYTES_MAX} a page may`);
}

/** SNAPPY pages (older tier files, other writers) through hyparquet's decoder, into a buffer of the declared size once that size is one a page may have. */
export function decompressSnappyPage(bytes: Uint8Array, declaredBytes: number): Uint8Array {
  checkDeclaredPageBytes('SNAPPY', declaredBytes);
  const page = new Uint8Array(declaredBytes);
  snappyUncompress(bytes, page);
  return page;
}

/** The reader's decompressors: GZIP (hyparquet has none) and SNAPPY (hyparquet's, after the size check). */
export const PAGE_DECOMPRESSORS: Compressors = {
  GZIP: decompressGzipPage,
  SNAPPY: decompressSnappyPage,
};
