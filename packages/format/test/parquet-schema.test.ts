// Goal: a written file carries what Iceberg readers need: field ids 1..21 with the column names, STRING/INT64 types, event_time as TIMESTAMP(UTC, MICROS), repetition per the column list, GZIP, and min/max/null-count statistics.
import { parquetMetadata, type FileMetaData } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { AUDIT_COLUMNS } from '../src/audit-columns.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { buildEvents, testSeed } from './events.js';

const seed = testSeed();
console.log(`parquet-schema seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

const events = buildEvents(seed, { count: 1_000 });
const bytes = encodeAuditParquet(events, { rowGroupSize: 300 });
// Raw metadata: timestamps left as their INT64 micros so bounds compare exactly.
const metadata: FileMetaData = parquetMetadata(bytes, { parsers: { timestampFromMicroseconds: (micros: bigint) => micros } });

const NAMES = ['event_id', 'source', 'user_id', 'action', 'resource', 'tables', 'query', 'details', 'ts', 'event_time', 'decision', 'ingest_ts', 'seq', 'term', 'source_id', 'source_seq', 'record_hash', 'chain_hash', 'field_check', 'erased', 'salt'];
const LONGS = ['ts', 'ingest_ts', 'seq', 'term', 'source_seq'];
const OPTIONAL_NULLABLE = new Set(['source_id', 'source_seq', 'record_hash', 'chain_hash', 'field_check', 'erased', 'salt']);
const REQUIRED = new Set(['event_id', 'source', 'user_id', 'action', 'ts', 'event_time', 'ingest_ts']);

describe('tiered Parquet schema', () => {
  it('has the 21 columns in order with field ids 1..21', () => {
    const [root, ...columns] = metadata.schema;
    expect(root?.num_children).toBe(21);
    expect(columns.map((c) => c.name)).toEqual(NAMES);
    expect(columns.map((c) => c.field_id)).toEqual(NAMES.map((_, i) => i + 1));
    expect(AUDIT_COLUMNS.map((c) => [c.name, c.fieldId])).toEqual(NAMES.map((name, i) => [name, i + 1]));
  });

  it('declares required and optional columns as the column list does', () => {
    for (const element of metadata.schema.slice(1)) {
      expect([element.name, element.repetition_type]).toEqual([element.name, REQUIRED.has(element.name) ? 'REQUIRED' : 'OPTIONAL']);
    }
    expect(AUDIT_COLUMNS.filter((c) => c.required).map((c) => c.name)).toEqual([...REQUIRED]);
  });

  it('stores strings as BYTE_ARRAY STRING, ts/ingest_ts/seq/term/source_seq as plain INT64, event_time as TIMESTAMP(UTC, MICROS)', () => {
    const byName = new Map(metadata.schema.slice(1).map((e) => [e.name, e]));
    for (const name of NAMES.filter((n) => n !== 'event_time' && !LONGS.includes(n))) {
      expect(byName.get(name)).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } });
    }
    for (const name of LONGS) {
      const element = byName.get(name);
      expect(element?.type).toBe('INT64');
      expect(element?.logical_type).toBeUndefined();
      expect(element?.converted_type).toBeUndefined();
    }
    expect(byName.get('event_time')).toMatchObject({
      type: 'INT64',
      converted_type: 'TIMESTAMP_MICROS',
      logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
    });
  });

  it('writes row groups of the requested size, GZIP-compressed, with statistics on every column chunk', () => {
    expect(metadata.row_groups.map((g) => Number(g.num_rows))).toEqual([300, 300, 300, 100]);
    for (const group of metadata.row_groups) {
      expect(group.columns.map((c) => c.meta_data?.path_in_schema[0])).toEqual(NAMES);
      for (const chunk of group.columns) {
        const meta = chunk.meta_data;
        expect(meta?.codec).toBe('GZIP');
        // Only the optional source and chain columns hold nulls (events without those values).
        if (!OPTIONAL_NULLABLE.has(meta?.path_in_schema[0] ?? '')) expect(meta?.statistics?.null_count).toBe(0n);
        if (meta?.statistics?.null_count !== meta?.num_values) {
          expect(meta?.statistics?.min_value).toBeDefined();
          expect(meta?.statistics?.max_value).toBeDefined();
        }
      }
    }
  });

  it('has exact ts and event_time statistics per row group that match the sorted rows', () => {
    const times = events.map((e) => e.timestamp).sort((a, b) => a - b);
    let start = 0;
    for (const group of metadata.row_groups) {
      const rows = Number(group.num_rows);
      const first = times[start] as number;
      const last = times[start + rows - 1] as number;
      const stats = (name: string) => group.columns.find((c) => c.meta_data?.path_in_schema[0] === name)?.meta_data?.statistics;
      expect([stats('ts')?.min_value, stats('ts')?.max_value]).toEqual([BigInt(first), BigInt(last)]);
      expect([stats('event_time')?.min_value, stats('event_time')?.max_value]).toEqual([BigInt(first) * 1000n, BigInt(last) * 1000n]);
      expect(stats('ts')?.is_min_value_exact).not.toBe(false);
      expect(stats('ts')?.is_max_value_exact).not.toBe(false);
      start += rows;
    }
  });
});
