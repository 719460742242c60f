// Goal: reading a whole tiered file column by column (the verifier's read) gives exactly the
// events the row reader gives — over several row groups and pages, with the chain and erased
// columns, for the committed fixtures (older layouts, SNAPPY pages) — and refuses what the row
// reader refuses.
import { readFile } from 'node:fs/promises';
import { AuditErrorCode } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { bytesSource } from '../src/byte-source.js';
import { readAuditParquet, readWholeAuditParquet } from '../src/parquet-reader.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { buildEvents, testSeed } from './events.js';

const seed = testSeed();
console.log(`whole-file-read seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

describe('readWholeAuditParquet', () => {
  it('reads exactly what readAuditParquet reads, row group after row group', async () => {
    const events = buildEvents(seed, { count: 2_500 }).map((event, i) => ({
      ...event,
      recordHash: 'a'.repeat(64),
      chainHash: i.toString(16).padStart(64, '0'),
      fieldCheck: 'b'.repeat(56),
      ...(i % 7 === 0 ? { erased: { query: 'c'.repeat(64) } } : {}),
      ...(i % 3 === 0 ? { sourceId: `plugin-${i % 5}`, sourceSeq: i } : {}),
    }));
    const bytes = encodeAuditParquet(events, { rowGroupSize: 700 });
    const whole = await readWholeAuditParquet(bytesSource(bytes));
    expect(whole).toHaveLength(events.length);
    expect(whole).toEqual(await readAuditParquet(bytesSource(bytes)));
    expect(whole.some((e) => e.erased !== undefined) && whole.some((e) => e.sourceSeq !== undefined) && whole.some((e) => e.sourceSeq === undefined)).toBe(true);
  });

  it('reads the committed fixtures (earlier layouts, SNAPPY pages) as the row reader does', async () => {
    for (const name of ['three-events.parquet', 'three-events-snappy.parquet', 'three-events-before-sketch.parquet']) {
      const bytes = new Uint8Array(await readFile(new URL(`./fixtures/${name}`, import.meta.url)));
      expect(await readWholeAuditParquet(bytesSource(bytes)), name).toEqual(await readAuditParquet(bytesSource(bytes)));
    }
  });

  it('refuses bytes that are not Parquet with a coded error', async () => {
    await expect(readWholeAuditParquet(bytesSource(new TextEncoder().encode('not parquet at all, not even close')))).rejects.toMatchObject({ code: AuditErrorCode.TABLE_INVALID });
  });
});
