// Goal: what verify checks of an Iceberg manifest entry (every column's counts and bounds, the
// partition's nulls) and of a manifest list's partition summary accepts every record our writer
// makes (awkward strings, truncated bounds, a column the file lacks) and every wider one, and
// refuses each declaration that excludes a value, naming the column and both values; the
// column summaries verify reads are exact in Iceberg's (code point) order.
import { AuditErrorCode, type ColumnValueSummary, type StoredEvent } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  auditFieldId,
  bytesSource,
  checkDeclaredMetrics,
  checkPartitionSummary,
  dataFileFromParquet,
  encodeAuditParquet,
  encodeIntBound,
  encodeLongBound,
  encodeStringBound,
  manifestFileFor,
  readWholeAuditColumns,
  summarizeAuditColumns,
  type DataFile,
  type ManifestEntry,
} from '../src/index.js';
import { buildEvents, DAY_MS, testSeed } from './events.js';

const seed = testSeed();
console.log(`iceberg-declared-metrics seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

const WHERE = 'tier file data/f.parquet';
const USER_ID = auditFieldId('user_id');
const INGEST_TS = auditFieldId('ingest_ts');

/** A file of `events`, the record our writer makes of it and the summaries verify reads of it. */
async function written(events: readonly StoredEvent[]): Promise<{ declared: DataFile; summaries: ColumnValueSummary[] }> {
  const bytes = encodeAuditParquet(events);
  const declared = dataFileFromParquet({ events, filePath: 's3://b/data/f.parquet', fileSizeBytes: bytes.byteLength, parquetBytes: bytes });
  return { declared, summaries: (await readWholeAuditColumns(bytesSource(bytes))).summaries };
}

const replaced = <V>(map: Array<{ key: number; value: V }> | null, key: number, value: V) => (map ?? []).map((entry) => (entry.key === key ? { ...entry, value } : entry));

describe('checkDeclaredMetrics', () => {
  it('accepts the record our writer makes, for random strings (4-byte characters, U+FFFF, past the 16 code points of a bound)', async () => {
    // No lone surrogate: the row-group sketch check refuses such a file before (left to its own fix).
    const unit = fc.constantFrom('a', 'z', 'é', '監', '\u{1F600}', '\u{10FFFF}', '\uFFFF', '\uE000', '\u0000', ' ');
    const text = fc.string({ unit, maxLength: 40 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ user: text, query: text }), { minLength: 1, maxLength: 30 }), async (values) => {
        const base = buildEvents(seed, { count: values.length, spanMs: DAY_MS - 10 });
        const events = values.map((v, i) => ({ ...(base[i] as StoredEvent), userId: v.user, query: v.query }));
        const { declared, summaries } = await written(events);
        expect(() => checkDeclaredMetrics(WHERE, declared, summaries)).not.toThrow();
      }),
      { seed, numRuns: 100 },
    );
  });

  it('orders strings by code point, not UTF-16 unit: U+FFFF is below U+1F600', () => {
    const values = new Map<string, unknown[]>([['user_id', ['\u{1F600}', '\uFFFF', 'a']]]);
    const summary = summarizeAuditColumns(values, 3).find((s) => s.fieldId === USER_ID);
    expect(summary).toEqual({ fieldId: USER_ID, values: 3, nulls: 0, min: 'a', max: '\u{1F600}' });
    // A column the file lacks is null in every row.
    expect(summarizeAuditColumns(values, 3).find((s) => s.fieldId === INGEST_TS)).toEqual({ fieldId: INGEST_TS, values: 3, nulls: 3 });
  });

  it('refuses a bound that excludes a value or counts that differ, naming the column and both values; accepts wider bounds', async () => {
    const events = buildEvents(seed, { count: 20, spanMs: DAY_MS - 10 }).map((event, i) => ({ ...event, userId: `user-${i % 3}` }));
    const { declared, summaries } = await written(events);
    const check = (file: DataFile) => () => checkDeclaredMetrics(WHERE, file, summaries);
    expect(check({ ...declared, upper_bounds: replaced(declared.upper_bounds, USER_ID, encodeStringBound('user-1')) })).toThrow(
      `${WHERE} holds user_id "user-2", above the upper bound its commit declares for the column ("user-1"): a search that skips files by those bounds would miss it; the table's metadata was altered`,
    );
    expect(check({ ...declared, lower_bounds: replaced(declared.lower_bounds, USER_ID, encodeStringBound('user-0a')) })).toThrow('holds user_id "user-0", below the lower bound');
    expect(check({ ...declared, null_value_counts: replaced(declared.null_value_counts, USER_ID, 1) })).toThrow(`${WHERE} holds 0 nulls in column user_id, but its commit declares 1`);
    // Wider, or truncated as the spec allows, or absent: nothing is hidden.
    const least = Math.min(...events.map((e) => e.ingestTs));
    expect(check({ ...declared, lower_bounds: replaced(replaced(declared.lower_bounds, USER_ID, encodeStringBound('user')), INGEST_TS, encodeLongBound(least - 1)) })).not.toThrow();
    expect(check({ ...declared, upper_bounds: replaced(declared.upper_bounds, USER_ID, encodeStringBound('user.')) })).not.toThrow();
    expect(check({ ...declared, lower_bounds: null, upper_bounds: null, value_counts: null, null_value_counts: null })).not.toThrow();
    // A long bound of 4 bytes is read as an int (written before an int → long promotion), as engines read it.
    expect(check({ ...declared, lower_bounds: replaced(declared.lower_bounds, INGEST_TS, encodeIntBound(0)) })).not.toThrow();
    expect(check({ ...declared, upper_bounds: replaced(declared.upper_bounds, INGEST_TS, encodeIntBound(0)) })).toThrow(`holds ingest_ts ${Math.max(...events.map((e) => e.ingestTs))}, above the upper bound its commit declares for the column (0)`);
    // Bytes that are no value of the column's type are damage, not a bound.
    expect(check({ ...declared, upper_bounds: replaced(declared.upper_bounds, INGEST_TS, new Uint8Array(3)) })).toThrow(expect.objectContaining({ code: AuditErrorCode.TABLE_INVALID }));
    expect(check({ ...declared, upper_bounds: replaced(declared.upper_bounds, USER_ID, new Uint8Array([0xff])) })).toThrow(expect.objectContaining({ code: AuditErrorCode.TABLE_INVALID }));
    // A null partition for rows that have an event time: an engine projecting `event_time IS NULL` onto it would list the file for nothing else.
    expect(check({ ...declared, partition: { event_time_day: null } })).toThrow('but its commit declares no event_time_day (null)');
  });
});

describe('checkPartitionSummary', () => {
  const entry = (day: number | null, status: 0 | 1 | 2 = 1): ManifestEntry => ({
    status,
    snapshot_id: 1,
    sequence_number: 1,
    file_sequence_number: 1,
    data_file: { file_path: `s3://b/data/${day}.parquet`, partition: { event_time_day: day } } as DataFile,
  });
  const manifest = (entries: ManifestEntry[]) => manifestFileFor({ manifestPath: 's3://b/metadata/m.avro', manifestLengthBytes: 100, entries: entries.map((e) => ({ ...e, data_file: { ...e.data_file, partition: { event_time_day: e.data_file.partition.event_time_day ?? 0 } } })), snapshotId: 1, sequenceNumber: 1 });

  it('accepts the summary our writer makes and a wider one; refuses one that leaves out a live file, or its null day', () => {
    const entries = [entry(19_000), entry(19_002), entry(18_000, 2)];
    const file = manifest(entries.filter((e) => e.status !== 2));
    const summary = file.partitions?.[0] as NonNullable<typeof file.partitions>[number];
    expect(() => checkPartitionSummary('manifest list l', file, entries)).not.toThrow();
    expect(() => checkPartitionSummary('manifest list l', { ...file, partitions: [{ ...summary, lower_bound: encodeIntBound(1), upper_bound: encodeIntBound(30_000) }] }, entries)).not.toThrow();
    expect(() => checkPartitionSummary('manifest list l', { ...file, partitions: null }, entries)).not.toThrow();
    expect(() => checkPartitionSummary('manifest list l', { ...file, partitions: [{ ...summary, lower_bound: encodeIntBound(19_002) }] }, entries)).toThrow(
      'manifest list l: its summary of manifest s3://b/metadata/m.avro declares event_time_day 2022-01-10..2022-01-10, no nulls, but the manifest lists data file s3://b/data/19000.parquet of day 2022-01-08: a search that skips manifests by their partition summaries would miss it; the table\'s metadata was altered',
    );
    // A null lower bound says every value is null.
    expect(() => checkPartitionSummary('manifest list l', { ...file, partitions: [{ ...summary, lower_bound: null }] }, entries)).toThrow('declares event_time_day no day, no nulls');
    const withNull = [...entries, entry(null)];
    expect(() => checkPartitionSummary('manifest list l', file, withNull)).toThrow('of a null day');
    expect(() => checkPartitionSummary('manifest list l', { ...file, partitions: [{ ...summary, contains_null: true }] }, withNull)).not.toThrow();
  });
});
