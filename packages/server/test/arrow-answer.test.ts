// Goal: GET /admin/audit with Accept: application/vnd.apache.arrow.stream answers the same page as JSON, as an Arrow IPC stream DuckDB reads with the tiered columns' names and types.
import { tableFromIPC } from 'apache-arrow';
import type { EventOutput } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { ARROW_STREAM_MEDIA_TYPE } from '../src/arrow-events.js';
import { readArrowWithDuckDb } from './duckdb-wasm.js';
import { event, startTestNode, type TestNode } from './test-node.js';

/** DuckDB-WASM compiles its module in a child process: 10–20 s on a loaded 2-core machine. */
const DUCKDB_TEST_TIMEOUT_MS = 240_000;

const TIERED_COLUMNS = [
  ['event_id', 'VARCHAR'],
  ['source', 'VARCHAR'],
  ['user_id', 'VARCHAR'],
  ['action', 'VARCHAR'],
  ['resource', 'VARCHAR'],
  ['tables', 'VARCHAR'],
  ['query', 'VARCHAR'],
  ['details', 'VARCHAR'],
  ['ts', 'BIGINT'],
  ['event_time', 'TIMESTAMP WITH TIME ZONE'],
  ['decision', 'VARCHAR'],
  ['ingest_ts', 'BIGINT'],
].map(([name, type]) => ({ name, type }));

async function arrow(t: TestNode, query: string): Promise<{ status: number; bytes: Uint8Array; headers: Headers }> {
  const res = await t.request(`/admin/audit${query}`, { headers: { accept: ARROW_STREAM_MEDIA_TYPE } });
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()), headers: res.headers };
}

async function json(t: TestNode, query: string): Promise<{ events: EventOutput[]; nextCursor?: string }> {
  const res = await t.request(`/admin/audit${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { events: EventOutput[]; nextCursor?: string };
}

/** What DuckDB must read for an event of the JSON answer. */
function expectedRow(e: EventOutput): Record<string, unknown> {
  return {
    event_id: e.eventId,
    source: e.source,
    user_id: e.userId,
    action: e.action,
    resource: e.resource,
    tables: e.tables.join(','),
    query: e.query,
    details: e.details,
    ts: BigInt(e.timestamp),
    event_time_ms: BigInt(e.timestamp),
    decision: e.decision,
    ingest_ts: BigInt(e.ingestTs),
  };
}

function withoutRawTime(row: Record<string, unknown>): Record<string, unknown> {
  const { event_time: _time, ...rest } = row;
  return rest;
}

describe('the Arrow answer', () => {
  it('is the JSON answer, page by page, read back by DuckDB with the tiered column names and types', async () => {
    const t = await startTestNode();
    const events = Array.from({ length: 25 }, (_, i) =>
      event({
        eventId: `e${String(i).padStart(2, '0')}`,
        source: i % 3 === 0 ? 'spark' : 'trino',
        userId: i % 2 ? 'ana' : 'Zoë "quoted", with\nnewline',
        decision: ['ALLOW', 'DENY', undefined][i % 3],
        tables: i % 4 === 0 ? [] : [`hive.s.t${i}`, 'hive.s.common'],
        query: i === 5 ? "SELECT 1 -- password='pw'" : `SELECT ${i}`,
        details: i === 7 ? '🦆 ünïcode, "json": {"a": 1}' : '',
        ts: 1_792_288_263_000 + (i % 10) * 1000 + i,
      }),
    );
    expect((await t.ingest(events)).status).toBe(200);

    const wanted: EventOutput[][] = [];
    const streams: Uint8Array[] = [];
    for (const query of ['?limit=10', '?limit=10&engine=trino&decision=DENY', '?q=hive.s.t1&limit=4', '?limit=100']) {
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = `${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const want = await json(t, page);
        const got = await arrow(t, page);
        expect(got.status).toBe(200);
        expect(got.headers.get('content-type')).toBe(ARROW_STREAM_MEDIA_TYPE);
        expect(got.headers.get('x-auditlake-next-cursor') ?? undefined).toBe(want.nextCursor);
        wanted.push(want.events);
        streams.push(got.bytes);
        cursor = want.nextCursor;
        pages++;
      } while (cursor !== undefined);
      expect(pages).toBeGreaterThan(0);
    }
    expect(wanted.flat().length).toBeGreaterThan(40);
    const reads = await readArrowWithDuckDb(streams);
    expect(reads).toHaveLength(streams.length);
    reads.forEach((read, i) => {
      expect(read.columns).toEqual(TIERED_COLUMNS);
      expect(read.rows.map(withoutRawTime)).toEqual(wanted[i]!.map(expectedRow));
    });
  }, DUCKDB_TEST_TIMEOUT_MS);

  it('marks the tier’s required columns not nullable, and answers an empty page with the schema alone', async () => {
    const t = await startTestNode();
    const empty = await arrow(t, '?user=nobody');
    expect(empty.status).toBe(200);
    const table = tableFromIPC(empty.bytes);
    expect(table.numRows).toBe(0);
    expect(table.schema.fields.map((f) => [f.name, f.nullable])).toEqual([
      ['event_id', false],
      ['source', false],
      ['user_id', false],
      ['action', false],
      ['resource', true],
      ['tables', true],
      ['query', true],
      ['details', true],
      ['ts', false],
      ['event_time', false],
      ['decision', true],
      ['ingest_ts', false],
    ]);
    expect((await readArrowWithDuckDb([empty.bytes]))[0]?.rows).toEqual([]);
  }, DUCKDB_TEST_TIMEOUT_MS);

  it('refuses bad parameters with the JSON error, as every answer does', async () => {
    const t = await startTestNode();
    const res = await t.request('/admin/audit?decision=maybe', { headers: { accept: ARROW_STREAM_MEDIA_TYPE } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('parameter decision must be ALLOW, DENY or none: maybe');
  });
});
