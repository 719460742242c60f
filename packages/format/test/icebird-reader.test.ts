// Goal: an independent Iceberg reader (icebird 0.3.1, over HTTP on 127.0.0.1) opens a table we assemble from 3 appends across several day partitions and returns exactly the events written, every column, at the latest and at an older version.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StoredEvent } from '@auditlake/model';
import { icebergRead } from 'icebird';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitTables, type TieredEvent } from '../src/index.js';
import { buildEvents, DAY_MS, ORIGIN_MS, testSeed } from './events.js';
import { buildMemoryTable, type MemoryTable } from './iceberg-table.js';

const seed = testSeed();
console.log(`icebird-reader seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

/** Three appends: days 0–1, days 1–3 (day 1 again, in a new file), day 3 plus a day before 1970. */
function appendBatches(): StoredEvent[][] {
  const batches = [
    buildEvents(seed, { count: 400, startMs: ORIGIN_MS, spanMs: 2 * DAY_MS }),
    buildEvents(seed + 1, { count: 500, startMs: ORIGIN_MS + DAY_MS + 3_600_000, spanMs: 2.5 * DAY_MS }),
    [
      ...buildEvents(seed + 2, { count: 150, startMs: ORIGIN_MS + 3 * DAY_MS, spanMs: DAY_MS / 2 }),
      ...buildEvents(seed + 3, { count: 20, startMs: -DAY_MS, spanMs: DAY_MS - 1 }),
    ],
  ];
  // Cluster-wide seq order across the appends, as the store assigns it.
  let seq = 0;
  return batches.map((batch) =>
    batch.map((event, i) => ({ ...event, eventId: `${event.eventId}-a${seq}-${i}`, seq: ++seq })),
  );
}

let server: Server;
let table: MemoryTable;

beforeAll(async () => {
  const objects = new Map<string, Uint8Array>();
  server = createServer((request, response) => {
    const body = objects.get(`${base()}${request.url ?? ''}`);
    if (body === undefined || request.method !== 'GET') {
      response.writeHead(404).end();
      return;
    }
    // hyparquet reads Parquet by range: answer 206 with exactly the bytes asked for.
    const range = /^bytes=(\d*)-(\d*)$/.exec(request.headers.range ?? '');
    if (range === null) {
      response.writeHead(200, { 'content-length': body.byteLength }).end(body);
      return;
    }
    const start = range[1] === '' ? body.byteLength - Number(range[2]) : Number(range[1]);
    const end = range[1] !== '' && range[2] !== '' ? Number(range[2]) + 1 : body.byteLength;
    const part = body.subarray(start, Math.min(end, body.byteLength));
    response
      .writeHead(206, { 'content-length': part.byteLength, 'content-range': `bytes ${start}-${start + part.byteLength - 1}/${body.byteLength}` })
      .end(part);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  table = buildMemoryTable(`${base()}/warehouse/audit/events`, appendBatches(), seed);
  for (const [key, value] of table.objects) objects.set(key, value);
});

afterAll(async () => {
  if (server !== undefined) await new Promise((resolve) => server.close(resolve));
});

function base(): string {
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

/** A row as icebird 0.3.1 returns it (hyparquet 1.19: INT64 → bigint, timestamptz → Date) → event. */
function eventOf(row: Record<string, unknown>): TieredEvent & { eventTimeMs: number } {
  return {
    eventId: row['event_id'] as string,
    source: row['source'] as string,
    userId: row['user_id'] as string,
    action: row['action'] as string,
    resource: row['resource'] as string,
    tables: splitTables(row['tables'] as string),
    query: row['query'] as string,
    details: row['details'] as string,
    timestamp: Number(row['ts']),
    eventTimeMs: (row['event_time'] as Date).getTime(),
    decision: row['decision'] as TieredEvent['decision'],
    ingestTs: Number(row['ingest_ts']),
    ...(row['seq'] === null ? {} : { seq: Number(row['seq']) }),
    ...(row['term'] === null ? {} : { term: Number(row['term']) }),
    ...(row['source_id'] === null ? {} : { sourceId: row['source_id'] as string }),
    ...(row['source_seq'] === null ? {} : { sourceSeq: Number(row['source_seq']) }),
    ...(row['record_hash'] === null ? {} : { recordHash: row['record_hash'] as string }),
    ...(row['chain_hash'] === null ? {} : { chainHash: row['chain_hash'] as string }),
    ...(row['field_check'] === null ? {} : { fieldCheck: row['field_check'] as string }),
    ...(row['erased'] === null ? {} : { erased: JSON.parse(row['erased'] as string) as Record<string, string> }),
    ...(row['salt'] === null ? {} : { salt: row['salt'] as string }),
  };
}

function expectedOf(events: readonly StoredEvent[]): (TieredEvent & { eventTimeMs: number })[] {
  return events.map((event) => ({ ...event, eventTimeMs: event.timestamp }));
}

const byId = (a: { eventId: string }, b: { eventId: string }): number => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

describe('icebird reads the assembled table', () => {
  it('returns every event of the 3 appends with every column equal (version from version-hint.text)', async () => {
    const rows = await icebergRead({ tableUrl: table.location });
    const all = table.appends.flat();
    expect(rows).toHaveLength(all.length);
    expect(rows.map(eventOf).sort(byId)).toEqual(expectedOf(all).sort(byId));
    // The table really spans several day partitions, one before 1970.
    const days = new Set(all.map((event) => Math.floor(event.timestamp / DAY_MS)));
    expect(days.size).toBeGreaterThanOrEqual(5);
    expect([...days].some((day) => day < 0)).toBe(true);
  });

  it('reads an older version by metadata file name: only the first append', async () => {
    const rows = await icebergRead({ tableUrl: table.location, metadataFileName: 'v2.metadata.json' });
    expect(rows.map(eventOf).sort(byId)).toEqual(expectedOf(table.appends[0] ?? []).sort(byId));
  });

  it('reads a row range across file boundaries (record_count is exact)', async () => {
    const all = await icebergRead({ tableUrl: table.location });
    const middle = await icebergRead({ tableUrl: table.location, rowStart: 150, rowEnd: 750 });
    expect(middle).toEqual(all.slice(150, 750));
  });

  it('refuses the empty table at v1 the way it refuses any table without a snapshot', async () => {
    await expect(icebergRead({ tableUrl: table.location, metadataFileName: 'v1.metadata.json' })).rejects.toThrow(/snapshot/);
  });
});
