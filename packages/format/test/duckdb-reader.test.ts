// Goal: an independent reader (DuckDB's read_parquet) agrees with what we wrote: row count, per-decision counts, row values, field ids, and event_time as TIMESTAMP WITH TIME ZONE with the exact bounds.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, DuckDBTimestampTZValue, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { buildEvents, DAY_MS, expectedTiered, testSeed } from './events.js';

const seed = testSeed();
console.log(`duckdb-reader seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

const events = buildEvents(seed, { count: 3_000, spanMs: 3 * DAY_MS });
const expected = expectedTiered(events);

let dir: string;
let file: string;
let instance: DuckDBInstance;
let connection: DuckDBConnection;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'auditlake-format-duckdb-'));
  file = join(dir, 'events.parquet');
  writeFileSync(file, encodeAuditParquet(events, { rowGroupSize: 1_000 }));
  instance = await DuckDBInstance.create(':memory:');
  connection = await instance.connect();
});

afterAll(() => {
  connection?.closeSync();
  instance?.closeSync();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Runs SQL with the file path bound as $1 and returns the rows as objects. */
async function query(sql: string): Promise<Record<string, unknown>[]> {
  const reader = await connection.runAndReadAll(sql, [file]);
  return reader.getRowObjects();
}

describe('DuckDB read_parquet of a tiered file', () => {
  it('finds the user_id Bloom filter of every row group: a user of the group passes, an absent user is excluded', async () => {
    const chunks = await query("SELECT row_group_id, bloom_filter_offset FROM parquet_metadata($1) WHERE path_in_schema = 'user_id' ORDER BY row_group_id");
    expect(chunks).toHaveLength(3);
    for (const chunk of chunks) expect(chunk['bloom_filter_offset']).not.toBeNull();
    const excluded = async (user: string) =>
      (await connection.runAndReadAll("SELECT bloom_filter_excludes FROM parquet_bloom_probe($1, 'user_id', $2) ORDER BY row_group_id", [file, user])).getRowObjects().map((row) => row['bloom_filter_excludes']);
    // Rows are in time order, 1,000 per group: the first event is in group 0, the last in group 2.
    expect((await excluded(expected[0]!.userId))[0]).toBe(false);
    expect((await excluded(expected.at(-1)!.userId))[2]).toBe(false);
    expect(await excluded('no-such-user-7f3a9c')).toEqual([true, true, true]);
  });

  it('counts the same rows and the same rows per decision', async () => {
    const [total] = await query('SELECT count(*) AS n FROM read_parquet($1)');
    expect(total?.['n']).toBe(BigInt(expected.length));
    const perDecision = await query('SELECT decision, count(*) AS n FROM read_parquet($1) GROUP BY decision ORDER BY decision');
    const counts = new Map<string, bigint>();
    for (const e of expected) counts.set(e.decision, (counts.get(e.decision) ?? 0n) + 1n);
    expect(perDecision).toEqual([...counts.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([decision, n]) => ({ decision, n })));
  });

  it('returns the same values for sampled rows, unicode included', async () => {
    const rows = await query(
      'SELECT event_id, source, user_id, action, resource, tables, query, details, ts, decision, ingest_ts FROM read_parquet($1)',
    );
    expect(rows).toHaveLength(expected.length);
    const byId = new Map(rows.map((row) => [row['event_id'], row]));
    const sample = [expected[0], expected[1], expected[Math.floor(expected.length / 2)], expected.at(-1), expected.find((e) => e.details.includes('😀'))];
    for (const event of sample) {
      if (event === undefined) throw new Error('sample event missing');
      expect(byId.get(event.eventId)).toEqual({
        event_id: event.eventId,
        source: event.source,
        user_id: event.userId,
        action: event.action,
        resource: event.resource,
        tables: event.tables.join(','),
        query: event.query,
        details: event.details,
        ts: BigInt(event.timestamp),
        decision: event.decision,
        ingest_ts: BigInt(event.ingestTs),
      });
    }
    // And every row's strings, not only the sample, decode to the same text.
    const ours = new Map(expected.map((e) => [e.eventId, e]));
    for (const row of rows) {
      const event = ours.get(row['event_id'] as string);
      expect([row['details'], row['query'], row['tables']]).toEqual([event?.details, event?.query, event?.tables.join(',')]);
    }
  });

  it('sees event_time as TIMESTAMP WITH TIME ZONE with the exact min and max', async () => {
    const [bounds] = await query(
      'SELECT min(event_time) AS lo, max(event_time) AS hi, typeof(min(event_time)) AS t FROM read_parquet($1)',
    );
    expect(bounds?.['t']).toBe('TIMESTAMP WITH TIME ZONE');
    expect(bounds?.['lo']).toBeInstanceOf(DuckDBTimestampTZValue);
    expect((bounds?.['lo'] as DuckDBTimestampTZValue).micros).toBe(BigInt(expected[0]?.timestamp ?? NaN) * 1000n);
    expect((bounds?.['hi'] as DuckDBTimestampTZValue).micros).toBe(BigInt(expected.at(-1)?.timestamp ?? NaN) * 1000n);
    const [mismatch] = await query('SELECT count(*) AS n FROM read_parquet($1) WHERE epoch_ms(event_time) <> ts');
    expect(mismatch?.['n']).toBe(0n);
  });

  it('reads the field ids 1..21 from the schema', async () => {
    const schema = await query('SELECT name, field_id FROM parquet_schema($1) WHERE field_id IS NOT NULL');
    expect(schema.map((row) => [row['name'], Number(row['field_id'])])).toEqual(
      ['event_id', 'source', 'user_id', 'action', 'resource', 'tables', 'query', 'details', 'ts', 'event_time', 'decision', 'ingest_ts', 'seq', 'term', 'source_id', 'source_seq', 'record_hash', 'chain_hash', 'field_check', 'erased', 'salt'].map(
        (name, i) => [name, i + 1],
      ),
    );
  });
});
