// Goal: findTieredRecords finds every tiered copy of an event by eventId alone — a copy re-sent
// without `ts` was stored with a later server time, in a file whose time range does not cover the
// first copy — reading every file's footer, skipping only row groups whose event_id statistics
// prove the ids absent, and reading the files a few at a time; given each copy's event time, it
// opens only the files whose time bounds hold it; an Iceberg table's files whose manifest
// event_id bounds rule the ids out are not opened at all.
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { useEmbeddedS3 } from '../src/testing/index.js';
import { bytesSource, encodeAuditParquet, type TieredEvent } from '@auditlake/format';
import { commitIcebergBatch, commitParquetBatch, ensureIcebergTable, findTieredRecords, IcebergTierSource, loadIcebergTable, ParquetTierSource, resolveIcebergTable, type TierFile, type TierSource, type TieredLookupStats } from '../src/index.js';

const BUCKET = 'lookup';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const CREDENTIALS = { accessKeyId: 'ALLOOKUPTEST00000001', secretAccessKey: 'lookup-test-secret-0123456789abcdefghi' };
const s3 = useEmbeddedS3('tiered-lookup-', BUCKET, CREDENTIALS);

function stored(eventId: string, seq: number, timestamp: number): StoredEvent {
  return { eventId, userId: `u${seq}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp, ingestTs: timestamp, seq, term: 1 };
}

describe('findTieredRecords', () => {
  it('finds a copy stored later with another time, in a file that does not cover the first copy', async () => {
    const location = { bucket: BUCKET, prefix: 'resent' };
    const objects = s3.connections.bucket('s3', BUCKET);
    const commit = (events: StoredEvent[], afterSeq: number) => commitParquetBatch(objects, location, events, { term: 1, nowMs: T0, afterSeq, mayCommit: () => true });
    // seq 1..3 on day 0, the first copy of `again` among them (sent without ts: the server's time then).
    await commit([stored('a1', 1, T0 + 1), stored('again', 2, T0 + 2), stored('a3', 3, T0 + 3)], 0);
    // Other files in between, then the retry two days later: a new seq and the server's time now.
    await commit([stored('b4', 4, T0 + DAY_MS + 4), stored('b5', 5, T0 + DAY_MS + 5)], 3);
    await commit([stored('c6', 6, T0 + 2 * DAY_MS + 6), stored('again', 7, T0 + 2 * DAY_MS + 7)], 5);
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/resent`, connectionId: 's3' });
    const files = await source.listFiles();
    expect(files).toHaveLength(3);

    const found = await findTieredRecords([source], new Set(['again', 'b5', 'absent']));
    expect(found.get('again')?.map((copy) => copy.seq).sort((a, b) => a - b)).toEqual([2, 7]);
    expect(found.get('again')?.[0]).toMatchObject({ source: 'trino', action: 'data:Select' });
    expect(found.get('b5')).toEqual([{ seq: 5, source: 'trino', action: 'data:Select' }]);
    expect(found.has('absent')).toBe(false);
  });

  it("skips only row groups whose event_id statistics prove the ids absent", async () => {
    const location = { bucket: BUCKET, prefix: 'stats' };
    const objects = s3.connections.bucket('s3', BUCKET);
    // Ten files of ids k00..k09, k10..k19, …: each file's event_id bounds are narrow.
    for (let f = 0; f < 10; f++) {
      const events = Array.from({ length: 10 }, (_, i) => stored(`k${f}${i}`, f * 10 + i + 1, T0 + f * 10 + i));
      await commitParquetBatch(objects, location, events, { term: 1, nowMs: T0, afterSeq: f * 10, mayCommit: () => true });
    }
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/stats`, connectionId: 's3' });
    const stats: TieredLookupStats = { files: 0, filesOpened: 0, rowGroups: 0, rowGroupsSkipped: 0, rowGroupsRead: 0 };
    const found = await findTieredRecords([source], new Set(['k37', 'k81', 'k3', 'k99x']), stats);
    expect([...found.keys()].sort()).toEqual(['k37', 'k81']);
    expect(found.get('k37')).toEqual([{ seq: 38, source: 'trino', action: 'data:Select' }]);
    expect(stats.files).toBe(10);
    // k3 and k37 fall in file 3's bounds, k81 in file 8's, k99x in file 9's: the other seven are not read.
    expect(stats).toMatchObject({ rowGroupsRead: 3, rowGroupsSkipped: stats.rowGroups - 3 });
  });

  it('opens no Iceberg data file whose manifest event_id bounds rule every id out, whatever its time', async () => {
    const table = resolveIcebergTable('cat.ops.lookup_bounds', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    let loaded = await ensureIcebergTable(objects, table, T0);
    // Ten commits of ids n0.. n9 (each its own range), all on one day.
    for (let c = 0; c < 10; c++) {
      const events = Array.from({ length: 10 }, (_, i) => stored(`n${c}-${String(i).padStart(2, '0')}`, c * 10 + i + 1, T0 + c * 10 + i));
      await commitIcebergBatch(objects, table, loaded, events, { term: 1, mayCommit: () => true, nowMs: T0, writerId: 'test' });
      loaded = (await loadIcebergTable(objects, table))!;
    }
    const source = new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    const stats: TieredLookupStats = { files: 0, filesOpened: 0, rowGroups: 0, rowGroupsSkipped: 0, rowGroupsRead: 0 };
    const found = await findTieredRecords([source], new Set(['n4-07', 'n8-00', 'zz-absent']), stats);
    expect([...found.keys()].sort()).toEqual(['n4-07', 'n8-00']);
    expect(found.get('n4-07')).toEqual([{ seq: 48, source: 'trino', action: 'data:Select' }]);
    // Ten files listed; only the two whose bounds hold an id are opened.
    expect(stats).toMatchObject({ files: 10, filesOpened: 2 });

    // Ids longer than a bound keeps (16 code points), sharing their first 16: every copy still found.
    for (let c = 0; c < 3; c++) {
      const events = Array.from({ length: 5 }, (_, i) => stored(`0190a5c4-7f1e-7${c}${i}-a${'é'.repeat(c)}-${i}`, 100 + c * 5 + i + 1, T0 + 100 + c * 5 + i));
      await commitIcebergBatch(objects, table, loaded, events, { term: 1, mayCommit: () => true, nowMs: T0, writerId: 'test' });
      loaded = (await loadIcebergTable(objects, table))!;
    }
    const wanted = ['0190a5c4-7f1e-702-a-2', '0190a5c4-7f1e-714-aé-4', '0190a5c4-7f1e-720-aéé-0'];
    const again = await findTieredRecords([new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' })], new Set(wanted));
    expect([...again.keys()].sort()).toEqual([...wanted].sort());
  });

  it('with each id\'s event time, opens only files whose time bounds hold it, and reads whole rows when asked', async () => {
    const location = { bucket: BUCKET, prefix: 'timed' };
    const objects = s3.connections.bucket('s3', BUCKET);
    // One file per day, ids that every file's event_id bounds admit (a, m, z on each day).
    for (let day = 0; day < 5; day++) {
      const events = ['a', 'm', 'z'].map((id, i) => stored(`${id}${day}`, day * 3 + i + 1, T0 + day * DAY_MS + i));
      await commitParquetBatch(objects, location, events, { term: 1, nowMs: T0, afterSeq: day * 3, mayCommit: () => true });
    }
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/timed`, connectionId: 's3' });
    const stats: TieredLookupStats = { files: 0, filesOpened: 0, rowGroups: 0, rowGroupsSkipped: 0, rowGroupsRead: 0 };
    // m2 at its own time; m3 asked at day 1's time, where it is not: not found (its day's file is not read).
    const eventTimes = new Map([['m2', T0 + 2 * DAY_MS + 1], ['m3', T0 + DAY_MS + 1]]);
    const found = await findTieredRecords([source], new Set(eventTimes.keys()), stats, { eventTimes, wholeRows: true });
    expect([...found.keys()]).toEqual(['m2']);
    expect(found.get('m2')?.[0]?.event).toMatchObject({ eventId: 'm2', seq: 8, userId: 'u8', query: 'q8', timestamp: T0 + 2 * DAY_MS + 1 });
    // Five files listed, two opened (days 1 and 2), one row group each.
    expect(stats).toMatchObject({ files: 5, rowGroups: 2 });
  });

  it("over a year's files, hands each file exactly the ids its time bounds hold (its ends included) and gives the event loop turns while it looks", async () => {
    // A listing of 60,000 one-second files; the ids' times name two of them at their very ends, and one before them all.
    const files: TierFile[] = Array.from({ length: 60_000 }, (_, i) => ({ key: `f${i}`, eventDate: '2026-05-01', rows: 1, tsMin: T0 + i * 1000, tsMax: T0 + i * 1000 + 999, bytes: 1 }));
    let turns = 0;
    let spinning = true;
    const spin = () => {
      if (!spinning) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const opened: Array<{ key: string; turns: number }> = [];
    const source: TierSource = {
      name: 'a year',
      listFiles: async () => files,
      open: async (file) => {
        opened.push({ key: file.key, turns });
        throw new Error('not read here');
      },
    };
    const eventTimes = new Map([['at-min', T0 + 10_000], ['at-max', T0 + 20_999], ['before', T0 - 1]]);
    try {
      await findTieredRecords([source], new Set(eventTimes.keys()), undefined, { eventTimes, unreadable: () => undefined });
    } finally {
      spinning = false;
    }
    expect(opened.map((o) => o.key).sort()).toEqual(['f10', 'f20']);
    // Looked at in a single turn, the other callback would have had none before the first open.
    expect(Math.min(...opened.map((o) => o.turns))).toBeGreaterThan(5);
  });

  it("with an id's event time, reads only the row groups whose ts statistics hold it (a compacted day is one file)", async () => {
    const groups = 20;
    const perGroup = 500;
    const events: TieredEvent[] = Array.from({ length: groups * perGroup }, (_, i) => stored(`id-${(i * 7919) % (groups * perGroup)}`, i + 1, T0 + i * 1000));
    const bytes = encodeAuditParquet(events, { rowGroupSize: perGroup });
    const file: TierFile = { key: 'day.parquet', eventDate: '2026-05-01', rows: events.length, tsMin: T0, tsMax: T0 + (events.length - 1) * 1000, bytes: bytes.byteLength };
    const source: TierSource = { name: 'one day', listFiles: async () => [file], open: async () => bytesSource(bytes) };
    const target = events[3 * perGroup + 7]!;
    const stats: TieredLookupStats = { files: 0, filesOpened: 0, rowGroups: 0, rowGroupsSkipped: 0, rowGroupsRead: 0 };
    const found = await findTieredRecords([source], new Set([target.eventId]), stats, { eventTimes: new Map([[target.eventId, target.timestamp]]), wholeRows: true });
    expect(found.get(target.eventId)?.[0]?.event).toMatchObject({ eventId: target.eventId, timestamp: target.timestamp });
    // Ids are spread over every group (their event_id statistics rule nothing out): time does.
    expect(stats).toMatchObject({ rowGroups: groups, rowGroupsRead: 1, rowGroupsSkipped: groups - 1 });
  });

  it('told to go on past what it cannot read, reports each unreadable source and answers with the copies the others hold; told nothing, it fails', async () => {
    const objects = s3.connections.bucket('s3', BUCKET);
    const commit = (prefix: string, events: StoredEvent[], afterSeq: number) => commitParquetBatch(objects, { bucket: BUCKET, prefix }, events, { term: 1, nowMs: T0, afterSeq, mayCommit: () => true });
    // A readable location, one with a damaged file beside a sound one, and one whose bucket is gone.
    await commit('sound', [stored('s1', 1, T0 + 1), stored('both', 2, T0 + 2)], 0);
    await commit('damaged', [stored('d3', 3, T0 + 3), stored('both', 4, T0 + 4)], 2);
    await commit('damaged', [stored('d5', 5, T0 + 5)], 4);
    const sound = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/sound`, connectionId: 's3' });
    const damaged = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/damaged`, connectionId: 's3' });
    const gone = new ParquetTierSource(s3.connections, { mode: 'parquet', path: 's3://no-such-bucket/gone', connectionId: 's3' });
    const [first] = await damaged.listFiles();
    const size = (await objects.get(first!.key)).byteLength;
    await objects.put(first!.key, new Uint8Array(size).fill(7));
    const ids = new Set(['s1', 'both', 'd3', 'd5']);

    await expect(findTieredRecords([sound, damaged, gone], ids)).rejects.toThrow();
    const unreadable: string[] = [];
    const found = await findTieredRecords([sound, damaged, gone], ids, undefined, { unreadable: (source) => unreadable.push(source.name) });
    expect(unreadable.sort()).toEqual([damaged.name, gone.name].sort());
    // d3 and the second copy of `both` were only in the damaged file.
    expect([...found.keys()].sort()).toEqual(['both', 's1', 'd5'].sort());
    expect(found.get('both')).toEqual([{ seq: 2, source: 'trino', action: 'data:Select' }]);
  });
});
