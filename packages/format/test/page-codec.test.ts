// Goal: a GZIP page inflates to the size its header declares and never further, and no page may declare more than PAGE_DECLARED_BYTES_MAX (GZIP or SNAPPY: the declared size is allocated): a page that would inflate beyond it (a gzip bomb in a hostile tier file) is refused without inflating it all, and so is one that inflates to less; a page the writer made reads back as written.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compressTierPage, decompressGzipPage, decompressSnappyPage, PAGE_DECLARED_BYTES_MAX, PAGE_DECOMPRESSORS } from '../src/page-codec.js';

describe('decompressGzipPage', () => {
  it('inflates a page the writer made to exactly its bytes', () => {
    const page = new TextEncoder().encode('select * from t where x = 1; '.repeat(1000));
    expect(Buffer.from(decompressGzipPage(compressTierPage(page), page.byteLength)).equals(page)).toBe(true);
    expect(decompressGzipPage(compressTierPage(new Uint8Array(0)), 0).byteLength).toBe(0);
    // What the Parquet reader calls: the same function.
    expect(PAGE_DECOMPRESSORS['GZIP']).toBe(decompressGzipPage);
  });

  it('refuses a page that inflates beyond its declared size, without inflating it all', () => {
    // 64 MiB of zeros in about 64 KB; the header says 100 bytes.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const rssBefore = process.memoryUsage().rss;
    expect(() => decompressGzipPage(bomb, 100)).toThrow(expect.objectContaining({ code: 'AUDIT_TABLE_INVALID', message: 'tiered file is not readable Parquet: a GZIP page inflates beyond the 100 bytes its header declares' }));
    // Inflated whole, the page alone would have taken 64 MiB.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(32 * 1024 * 1024);
  });

  it('refuses a page declaring more than PAGE_DECLARED_BYTES_MAX before inflating or allocating it, GZIP or SNAPPY', () => {
    // A bomb that inflates to exactly what it declares passed the size check (second review): the size is the writer's to say.
    const declared = PAGE_DECLARED_BYTES_MAX + 1;
    const gzipped = gzipSync(Buffer.alloc(1024));
    expect(() => decompressGzipPage(gzipped, declared)).toThrow(`tiered file is not readable Parquet: a GZIP page declares ${declared} bytes uncompressed, more than the ${PAGE_DECLARED_BYTES_MAX} a page may`);
    expect(() => decompressSnappyPage(Uint8Array.of(0), 2 ** 31 - 1)).toThrow(/a SNAPPY page declares 2147483647 bytes uncompressed, more than/);
    expect(PAGE_DECOMPRESSORS['SNAPPY']).toBe(decompressSnappyPage);
    // At the limit and below, a page is read as it is.
    const page = new TextEncoder().encode('x'.repeat(4096));
    expect(Buffer.from(decompressGzipPage(gzipSync(page), page.byteLength)).equals(page)).toBe(true);
  });

  it('refuses a page that inflates to less than declared, and a declared size that is not a size', () => {
    const page = compressTierPage(new Uint8Array(10));
    expect(() => decompressGzipPage(page, 11)).toThrow('a GZIP page inflates to 10 bytes, its header declares 11');
    expect(() => decompressGzipPage(page, -1)).toThrow('a GZIP page declares -1 bytes uncompressed');
    expect(() => decompressGzipPage(page, Number.NaN)).toThrow(/declares NaN bytes/);
    expect(() => decompressGzipPage(Uint8Array.of(1, 2, 3), 3)).toThrow(/a GZIP page does not inflate: /);
  });
});
