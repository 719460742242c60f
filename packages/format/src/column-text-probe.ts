import type { ColumnMetaData } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import { foldedCopy, snappyUncompressFolded } from './folded-snappy.js';
import { checkDeclaredPageBytes, decompressGzipPage } from './page-codec.js';

/**
 * The free-text prefilter over one column chunk's raw bytes: can any value of the chunk,
 * lower-cased as JavaScript's `toLowerCase` does, contain `needle`? It answers without
 * decoding a single value into a string: it decompresses the pages that hold values,
 * ASCII-folds them (see folded-snappy.ts) and searches their bytes natively.
 *
 * It may say "maybe" for a chunk without a match (the caller then decodes and tests exactly);
 * it must never say "no" for a chunk with one. Why "no" is safe:
 * - Dictionary-encoded data pages hold indices into the dictionary page; every value of such a
 *   page is a dictionary entry, so searching the dictionary page covers them. A low-cardinality
 *   column (user, action, resource) is thus answered from a few kilobytes.
 * - PLAIN and DELTA_LENGTH_BYTE_ARRAY pages hold each value's bytes contiguously, so a value
 *   containing the needle makes the page contain it. Bytes around values (lengths, levels)
 *   can only add false "maybe"s.
 * - Folding 'A'..'Z' is exactly `toLowerCase` for ASCII. For the needle to be ASCII and match
 *   in a lower-cased value, the match's characters are ASCII in the lower-cased value; the
 *   only non-ASCII characters whose lower case contains ASCII are U+0130 (İ → i̇) and U+212A
 *   (Kelvin sign → k), so a page holding either is a "maybe" too. A needle that is not ASCII
 *   is not prefiltered at all.
 * Anything else — another encoding (DELTA_BYTE_ARRAY splits values into prefix and suffix),
 * another codec, a page type we do not know, bytes that do not parse — is a "maybe".
 */

/** UTF-8 of the non-ASCII characters whose lower case contains ASCII (see above; a test derives the list). */
export const LOWERS_TO_ASCII_UTF8: readonly Uint8Array[] = [Uint8Array.of(0xc4, 0xb0), Uint8Array.of(0xe2, 0x84, 0xaa)];

/** True when the needle is one the prefilter can answer for: non-empty ASCII. */
export function isPrefilterNeedle(needle: string): boolean {
  return needle.length > 0 && /^[\x00-\x7f]*$/.test(needle);
}

/** Searches folded page bytes for the needle or a character that lower-cases into ASCII. */
function foldedMayContain(folded: Uint8Array, needle: Uint8Array): boolean {
  const haystack = Buffer.from(folded.buffer, folded.byteOffset, folded.byteLength);
  if (haystack.indexOf(needle) !== -1) return true;
  for (const special of LOWERS_TO_ASCII_UTF8) if (haystack.indexOf(special) !== -1) return true;
  return false;
}

/** The folded bytes of a page body, or undefined when the codec is one we do not decompress. */
function foldedBody(body: Uint8Array, uncompressedBytes: number, codec: ColumnMetaData['codec'], compressed: boolean): Uint8Array | undefined {
  if (!compressed || codec === 'UNCOMPRESSED') return foldedCopy(body);
  if (uncompressedBytes === 0) return new Uint8Array(0);
  // Tier files today: native inflate, then one folding pass (a JavaScript loop, but over
  // bytes the native code produced far faster than any JavaScript decompressor would).
  if (codec === 'GZIP') return foldedCopy(decompressGzipPage(body, uncompressedBytes));
  // Tier files written before GZIP: decompressed and folded in one pass.
  if (codec === 'SNAPPY') {
    checkDeclaredPageBytes('SNAPPY', uncompressedBytes);
    return snappyUncompressFolded(body, new Uint8Array(uncompressedBytes));
  }
  return undefined;
}

const DICTIONARY_ENCODINGS: ReadonlySet<string> = new Set(['RLE_DICTIONARY', 'PLAIN_DICTIONARY']);
const CONTIGUOUS_ENCODINGS: ReadonlySet<string> = new Set(['PLAIN', 'DELTA_LENGTH_BYTE_ARRAY']);

/**
 * Whether a BYTE_ARRAY column chunk (its bytes from the start of its first page, dictionary
 * or data, to its end) may hold a value that contains `needle` once lower-cased. `needle` is
 * the UTF-8 of a string for which {@link isPrefilterNeedle} is true, already lower-case.
 */
export function columnChunkMayContain(chunk: Uint8Array, meta: ColumnMetaData, needle: Uint8Array): boolean {
  if (meta.type !== 'BYTE_ARRAY') return true;
  try {
    const reader = { view: new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength), offset: 0 };
    let sawDictionary = false;
    while (reader.offset < chunk.byteLength) {
      const header = parquetHeader(reader);
      const bodyStart = reader.offset;
      const bodyEnd = bodyStart + header.compressed_page_size;
      if (bodyEnd > chunk.byteLength) return true;
      reader.offset = bodyEnd;
      const body = chunk.subarray(bodyStart, bodyEnd);
      if (header.type === 'DICTIONARY_PAGE') {
        const encoding = header.dictionary_page_header?.encoding;
        if (encoding !== 'PLAIN' && encoding !== 'PLAIN_DICTIONARY') return true;
        const folded = foldedBody(body, header.uncompressed_page_size, meta.codec, true);
        if (folded === undefined || foldedMayContain(folded, needle)) return true;
        sawDictionary = true;
      } else if (header.type === 'DATA_PAGE_V2') {
        const v2 = header.data_page_header_v2;
        if (!v2) return true;
        if (DICTIONARY_ENCODINGS.has(v2.encoding)) {
          if (!sawDictionary) return true;
          continue;
        }
        if (!CONTIGUOUS_ENCODINGS.has(v2.encoding)) return true;
        // V2 keeps the levels uncompressed in front of the (possibly compressed) values.
        const levelBytes = v2.repetition_levels_byte_length + v2.definition_levels_byte_length;
        const values = body.subarray(levelBytes);
        const folded = foldedBody(values, header.uncompressed_page_size - levelBytes, meta.codec, v2.is_compressed !== false);
        if (folded === undefined || foldedMayContain(folded, needle)) return true;
      } else if (header.type === 'DATA_PAGE') {
        const v1 = header.data_page_header;
        if (!v1) return true;
        if (DICTIONARY_ENCODINGS.has(v1.encoding)) {
          if (!sawDictionary) return true;
          continue;
        }
        if (!CONTIGUOUS_ENCODINGS.has(v1.encoding)) return true;
        // V1 compresses levels and values together; levels bytes can only add false "maybe"s.
        const folded = foldedBody(body, header.uncompressed_page_size, meta.codec, true);
        if (folded === undefined || foldedMayContain(folded, needle)) return true;
      } else if (header.type !== 'INDEX_PAGE') {
        return true;
      }
    }
    return false;
  } catch {
    // Bytes we cannot walk: let the exact path decide (and report a broken file).
    return true;
  }
}
