// Goal: the data_file of a Parquet file has exact counts, a one-day partition value and bounds that are true bounds of every value in the file (awkward and long strings included); the day transform floors toward -∞.
import type { StoredEvent } from '@auditlake/model';
import fc from 'fast-check';
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import {
  AUDIT_COLUMNS,
  auditIcebergSchema,
  compareCodePoints,
  dataFileFromParquet,
  dataFileFromParquetFooter,
  dayOrdinal,
  dayPartitionPath,
  decodeLongBound,
  decodeStringBound,
  encodeAuditParquet,
  icebergParquetKvMetadata,
  toRow,
} from '../src/index.js';
import { buildEvents, DAY_MS, ORIGIN_MS, testSeed } from './events.js';

const seed = testSeed();
console.log(`iceberg-data-file seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

describe('dayOrdinal and the partition path', () => {
  it('counts whole UTC days since 1970-01-01, flooring before the epoch', () => {
    expect(dayOrdinal(0)).toBe(0);
    expect(dayOrdinal(DAY_MS - 1)).toBe(0);
    expect(dayOrdinal(DAY_MS)).toBe(1);
    expect(dayOrdinal(-1)).toBe(-1);
    expect(dayOrdinal(-DAY_MS)).toBe(-1);
    expect(dayOrdinal(-DAY_MS - 1)).toBe(-2);
    expect(dayOrdinal(Date.UTC(2024, 4, 1, 23, 59, 59, 999))).toBe(19844);
    expect(dayPartitionPath(19844)).toBe('event_time_day=2024-05-01');
    expect(dayPartitionPath(-1)).toBe('event_time_day=1969-12-31');
    expect(() => dayOrdinal(1.5)).toThrow(TypeError);
  });
});

describe('dataFileFromParquet', () => {
  // One day of awkward events, plus strings longer than 16 code points that sort high and low.
  const events: StoredEvent[] = [
    ...buildEvents(seed, { count: 600, spanMs: DAY_MS - 10 }),
    ...['\u{10FFFF}'.repeat(20), '\u{10FFFF}'.repeat(15) + 'a' + 'x'.repeat(5), '\u0000'.repeat(20), '\uFFFF'.repeat(18) + '\u{1F600}'].map(
      (text, i) => ({ ...(buildEvents(seed + 1, { count: 1 })[0] as StoredEvent), eventId: `long-${i}`, userId: text, details: text, query: i === 0 ? 'q' : text }),
    ),
  ];
  const bytes = encodeAuditParquet(events, { kvMetadata: icebergParquetKvMetadata(), rowGroupSize: 250 });
  const path = 's3://b/wh/audit/events/data/event_time_day=2026-03-01/f.parquet';
  const file = dataFileFromParquet({ events, filePath: path, fileSizeBytes: bytes.byteLength, parquetBytes: bytes });

  it('has exact counts, the day, the size, and the footer sizes and row-group offsets', () => {
    expect(file).toMatchObject({
      content: 0,
      file_path: path,
      file_format: 'PARQUET',
      partition: { event_time_day: dayOrdinal(ORIGIN_MS) },
      record_count: events.length,
      file_size_in_bytes: bytes.byteLength,
      nan_value_counts: null,
      key_metadata: null,
      equality_ids: null,
      sort_order_id: 0,
      referenced_data_file: null,
    });
    const ids = AUDIT_COLUMNS.map((c) => c.fieldId);
    expect(file.value_counts).toEqual(ids.map((key) => ({ key, value: events.length })));
    const nulls = (name: string) => toRowsNulls(events, name);
    expect(file.null_value_counts).toEqual(AUDIT_COLUMNS.map((c) => ({ key: c.fieldId, value: nulls(c.name) })));
    const footer = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    expect(file.split_offsets).toHaveLength(footer.row_groups.length);
    expect(file.split_offsets).toEqual(
      footer.row_groups.map((g) => Number(g.columns[0]?.meta_data?.dictionary_page_offset ?? g.columns[0]?.meta_data?.data_page_offset)),
    );
    expect(file.column_sizes?.map((c) => c.key)).toEqual(ids);
    expect(file.column_sizes?.every((c) => c.value > 0)).toBe(true);
    // The footer carries the Iceberg schema for name-based readers (icebird).
    expect(JSON.parse(footer.key_value_metadata?.find((kv) => kv.key === 'iceberg.schema')?.value ?? '')).toEqual(auditIcebergSchema());
    // Without the bytes, the footer-derived fields are null rather than guessed.
    const withoutBytes = dataFileFromParquet({ events, filePath: path, fileSizeBytes: bytes.byteLength });
    expect(withoutBytes.column_sizes).toBeNull();
    expect(withoutBytes.split_offsets).toBeNull();
    expect({ ...withoutBytes, column_sizes: file.column_sizes, split_offsets: file.split_offsets }).toEqual(file);
  });

  it('bounds every value of every column (strings by code point, truncated to 16 code points)', () => {
    const rows = events.map(toRow);
    const lower = new Map(file.lower_bounds?.map((b) => [b.key, b.value]));
    const upper = new Map(file.upper_bounds?.map((b) => [b.key, b.value]));
    for (const column of AUDIT_COLUMNS) {
      const low = lower.get(column.fieldId);
      expect(low, column.name).toBeDefined();
      const high = upper.get(column.fieldId);
      for (const row of rows) {
        const value = row[column.name];
        if (value === null) continue;
        if (column.icebergType === 'string') {
          expect(compareCodePoints(decodeStringBound(low as Uint8Array), value as string)).toBeLessThanOrEqual(0);
          if (high !== undefined) expect(compareCodePoints(decodeStringBound(high), value as string)).toBeGreaterThanOrEqual(0);
        } else {
          expect(decodeLongBound(low as Uint8Array) <= BigInt(value as number | bigint)).toBe(true);
          expect(decodeLongBound(high as Uint8Array) >= BigInt(value as number | bigint)).toBe(true);
        }
      }
      if (column.icebergType === 'string') {
        expect(Array.from(decodeStringBound(low as Uint8Array)).length).toBeLessThanOrEqual(16);
      } else {
        // Numeric bounds are exact: attained by some row.
        const values = rows.map((row) => row[column.name]).filter((value) => value !== null).map((value) => BigInt(value));
        expect(values).toContain(decodeLongBound(low as Uint8Array));
        expect(values).toContain(decodeLongBound(high as Uint8Array));
      }
    }
    // details has a value of 20 × U+10FFFF: no 16-code-point string sorts after it, so no upper bound.
    expect(upper.has(8)).toBe(false);
    // query's largest value is U+10FFFF ×15 + 'a' + …: the truncated upper bound increments 'a'.
    expect(decodeStringBound(upper.get(7) as Uint8Array)).toBe('\u{10FFFF}'.repeat(15) + 'b');
  });

  // The sweep builds its files' records from the footer (dataFileFromParquetFooter) rather than
  // from the events: it must be the very record the events give, awkward strings included.
  it('is the same record when built from the file footer instead of the events', async () => {
    expect(await dataFileFromParquetFooter({ filePath: path, parquetBytes: bytes })).toEqual(file);
  });

  it('is the same record from the footer for random strings (4-byte characters, lone surrogates, past the statistics limit) and row groups', async () => {
    const unit = fc.constantFrom('a', 'z', 'é', '監', '\u{1F600}', '\u{10FFFF}', '\uFFFF', '\uD800', '\uDC00', '\u0000', ' ');
    const text = fc.string({ unit, maxLength: 90 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ user: text, query: text, details: text, resource: text }), { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 50 }), async (values, rowGroupSize) => {
        const base = buildEvents(seed + 2, { count: values.length, spanMs: DAY_MS - 10 });
        const some = values.map((v, i) => ({ ...(base[i] as StoredEvent), userId: v.user, query: v.query, details: v.details, resource: v.resource }));
        const encoded = encodeAuditParquet(some, { rowGroupSize });
        const fromEvents = dataFileFromParquet({ events: some, filePath: path, fileSizeBytes: encoded.byteLength, parquetBytes: encoded });
        expect(await dataFileFromParquetFooter({ filePath: path, parquetBytes: encoded })).toEqual(fromEvents);
      }),
      { seed, numRuns: 150 },
    );
  });

  it('refuses no events, several days, and bytes that disagree with the size or the events, with TypeError', () => {
    expect(() => dataFileFromParquet({ events: [], filePath: path, fileSizeBytes: 10 })).toThrow(TypeError);
    const twoDays = buildEvents(seed, { count: 10, spanMs: 2 * DAY_MS });
    expect(() => dataFileFromParquet({ events: twoDays, filePath: path, fileSizeBytes: 10 })).toThrow(TypeError);
    expect(() => dataFileFromParquet({ events, filePath: path, fileSizeBytes: bytes.byteLength + 1, parquetBytes: bytes })).toThrow(TypeError);
    expect(() => dataFileFromParquet({ events: events.slice(1), filePath: path, fileSizeBytes: bytes.byteLength, parquetBytes: bytes })).toThrow(TypeError);
    expect(() => dataFileFromParquet({ events, filePath: path, fileSizeBytes: 0 })).toThrow(TypeError);
  });
});

function toRowsNulls(events: readonly StoredEvent[], name: string): number {
  return events.map(toRow).filter((row) => row[name as keyof ReturnType<typeof toRow>] === null).length;
}
