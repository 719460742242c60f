// Goal: every event encoded to a tiered Parquet file reads back exactly (all fields, unicode, empty strings, every decision, table lists), sorted by event time.
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { fromRow, joinTables, splitTables, toRow } from '../src/audit-columns.js';
import { bytesSource } from '../src/byte-source.js';
import { readAuditParquet } from '../src/parquet-reader.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { buildEvents, expectedTiered, ORIGIN_MS, testSeed } from './events.js';

const seed = testSeed();
console.log(`round-trip seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

function storedEvent(overrides: Partial<StoredEvent>): StoredEvent {
  return {
    eventId: 'e1',
    userId: 'alice',
    source: 'trino',
    action: 'data:Select',
    resource: '',
    decision: '',
    tables: [],
    query: '',
    details: '',
    timestamp: ORIGIN_MS,
    ingestTs: ORIGIN_MS + 1,
    seq: 1,
    term: 1,
    ...overrides,
  };
}

describe('encodeAuditParquet → readAuditParquet', () => {
  it('returns every event with every field equal, sorted by event time', async () => {
    const events = buildEvents(seed, { count: 2_500 });
    const bytes = encodeAuditParquet(events, { rowGroupSize: 700 });
    const back = await readAuditParquet(bytesSource(bytes));
    expect(back).toEqual(expectedTiered(events));
    // The generator must have produced the cases this test claims to cover.
    const decisions = new Set(back.map((e) => e.decision));
    expect(decisions).toEqual(new Set(['ALLOW', 'DENY', '']));
    expect(back.some((e) => e.tables.length >= 3)).toBe(true);
    expect(back.some((e) => e.tables.length === 0)).toBe(true);
    expect(back.some((e) => e.details.includes('😀'))).toBe(true);
    expect(back.some((e) => e.query === '')).toBe(true);
  });

  it('keeps input order among events with the same event time', async () => {
    const events = ['c', 'a', 'b'].map((eventId, i) => storedEvent({ eventId, seq: i + 1 }));
    const back = await readAuditParquet(bytesSource(encodeAuditParquet(events)));
    expect(back.map((e) => e.eventId)).toEqual(['c', 'a', 'b']);
  });

  it('round-trips times before 1970 and far in the future exactly', async () => {
    const events = [-1, -86_400_001, 0, 4_102_444_800_123].map((timestamp, i) =>
      storedEvent({ eventId: `t${i}`, timestamp, ingestTs: ORIGIN_MS }),
    );
    const back = await readAuditParquet(bytesSource(encodeAuditParquet(events)));
    expect(back.map((e) => e.timestamp)).toEqual([-86_400_001, -1, 0, 4_102_444_800_123]);
    // event_time alone (floor division of negative micros) gives the same ms.
    const fromEventTime = await readAuditParquet(bytesSource(encodeAuditParquet(events)), { columns: ['event_time'] });
    expect(fromEventTime.map((e) => e.timestamp)).toEqual([-86_400_001, -1, 0, 4_102_444_800_123]);
  });

  it('writes the footer key-value metadata it is given', async () => {
    const { parquetMetadata } = await import('hyparquet');
    const bytes = encodeAuditParquet([storedEvent({})], { kvMetadata: { 'iceberg.schema': '{"type":"struct"}' } });
    const metadata = parquetMetadata(bytes);
    expect(metadata.key_value_metadata?.[0]).toEqual({ key: 'iceberg.schema', value: '{"type":"struct"}' });
    // Then the row-group sketches (row-group-sketch.ts), unless turned off.
    expect(metadata.key_value_metadata?.map((kv) => kv.key)).toEqual(['iceberg.schema', 'auditlake.row_group_sketch']);
    const plain = parquetMetadata(encodeAuditParquet([storedEvent({})], { kvMetadata: { 'iceberg.schema': '{}' }, rowGroupSketches: false }));
    expect(plain.key_value_metadata).toEqual([{ key: 'iceberg.schema', value: '{}' }]);
  });

  it('refuses no events, bad times, bad decisions and bad row group sizes with TypeError', () => {
    expect(() => encodeAuditParquet([])).toThrow(TypeError);
    expect(() => encodeAuditParquet([storedEvent({ timestamp: 1.5 })])).toThrow(TypeError);
    expect(() => encodeAuditParquet([storedEvent({ timestamp: Number.NaN })])).toThrow(TypeError);
    expect(() => encodeAuditParquet([storedEvent({ ingestTs: 2 ** 60 })])).toThrow(TypeError);
    expect(() => encodeAuditParquet([storedEvent({ decision: 'MAYBE' as 'ALLOW' })])).toThrow(TypeError);
    expect(() => encodeAuditParquet([storedEvent({})], { rowGroupSize: 0 })).toThrow(TypeError);
  });
});

describe('toRow / fromRow', () => {
  it('map an event to the tiered row and back, every field kept', () => {
    const event = storedEvent({ tables: ['cat.a.b', 'cat.c.d'], decision: 'DENY', timestamp: 1_700_000_000_123 });
    const row = toRow(event);
    expect(row.tables).toBe('cat.a.b,cat.c.d');
    expect(row.event_time).toBe(1_700_000_000_123_000n);
    expect(row.ts).toBe(1_700_000_000_123);
    expect(fromRow(row)).toEqual(event);
    const chained = { ...event, sourceId: 'p1', sourceSeq: 0, recordHash: 'a'.repeat(64), chainHash: 'b'.repeat(64), fieldCheck: 'c'.repeat(56), erased: { query: 'd'.repeat(64) } };
    expect(toRow(chained)).toMatchObject({ seq: event.seq, term: event.term, source_id: 'p1', source_seq: 0, record_hash: 'a'.repeat(64), erased: JSON.stringify({ query: 'd'.repeat(64) }) });
    expect(fromRow(toRow(chained))).toEqual(chained);
  });

  it('join tables with commas; a table name containing a comma comes back split (documented limit)', () => {
    expect(joinTables([])).toBe('');
    expect(splitTables('')).toEqual([]);
    expect(splitTables(joinTables(['a.b', '', 'c']))).toEqual(['a.b', '', 'c']);
    expect(splitTables(joinTables(['odd,name']))).toEqual(['odd', 'name']);
  });
});
