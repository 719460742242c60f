// Goal: Parquet-mode maintenance compacts each day's small committed files into one and swaps them by a compaction marker — readers (ParquetTierSource, DuckDB over the files it lists) see every event exactly once before, at and after the swap — a compaction that lost its day's generation to another writer adds nothing, a sweep committing meanwhile loses nothing, replaced files are deleted only after the grace period, and orphan cleanup removes an old unreferenced file but spares a young one, reading the commit markers a few at a time and, inside the commit lock, only those written since it read them before.
import { readWholeAuditParquet, type TieredEvent } from '@auditlake/format';
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { duckdbOverObjects, twoDayEvents, useEmbeddedS3, vanishingOnRead } from '../src/testing/index.js';
import {
  commitParquetBatch,
  compactionKey,
  compactParquetLocation,
  COMMITS_DIR,
  OBJECT_REQUESTS_IN_FLIGHT_MAX,
  liveParquetFiles,
  ParquetTierSource,
  readParquetLog,
  readCompactions,
  REPLACED_FILE_GRACE_MS,
  rewriteParquetRows,
  runParquetMaintenance,
  storeClockMs,
  type ObjectStore,
  type S3Location,
} from '../src/index.js';

const BUCKET = 'pqt';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALPARQUETMAINT000001', secretAccessKey: 'parquet-maint-secret-0123456789abcdefg' };
const s3 = useEmbeddedS3('parquet-maintenance-', BUCKET, CREDENTIALS);

/** Events firstSeq.. over two days (alternating), ingest order = seq order. */
const events = (firstSeq: number, count: number): StoredEvent[] => twoDayEvents(T0, firstSeq, count);

const fence = { term: 1, mayCommit: () => true };

/** A location with `commits` sweep commits of `perCommit` events each (two days per commit). */
async function locationWith(name: string, commits: number, perCommit: number): Promise<{ location: S3Location; objects: ObjectStore; seqMax: number }> {
  const location = { bucket: BUCKET, prefix: name };
  const objects = s3.connections.bucket('s3', BUCKET);
  for (let c = 0; c < commits; c++) {
    await commitParquetBatch(objects, location, events(1 + c * perCommit, perCommit), { term: 1, nowMs: T0, afterSeq: c * perCommit, mayCommit: () => true });
  }
  return { location, objects, seqMax: commits * perCommit };
}

/** The rows of every data file object under the location, referenced or not. */
async function rowsOfEveryFile(objects: ObjectStore, location: S3Location): Promise<TieredEvent[]> {
  const rows: TieredEvent[] = [];
  for (const key of await objects.list(`${location.prefix}/event_date=`)) rows.push(...(await readWholeAuditParquet(await objects.byteSource(key))));
  return rows;
}

/** What a reader reads: the files ParquetTierSource lists, counted by DuckDB. */
async function readerCounts(location: S3Location, objects: ObjectStore): Promise<{ files: number; rows: number; distinct: number }> {
  const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${location.bucket}/${location.prefix}`, connectionId: 's3' });
  onTestFinished(() => source.close());
  const files = await source.listFiles();
  const result = await duckdbOverObjects(objects, files.map((file) => file.key), s3.dir, 'SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d FROM {files}');
  return { files: files.length, rows: Number(result[0]?.['n']), distinct: Number(result[0]?.['d']) };
}

const POLICY = { removeOrphanFiles: true, orphanMinAgeMs: 0, targetFileSizeBytes: 16 * 1024 * 1024 };

describe('Parquet maintenance', () => {
  it('compacts each day into one file: every event once before, at and after the swap; replaced files go after the grace period', async () => {
    const { location, objects, seqMax } = await locationWith('compact', 6, 20);
    expect(await readerCounts(location, objects)).toEqual({ files: 12, rows: seqMax, distinct: seqMax });
    // A reader that listed before the swap keeps reading the old files: they stay within the grace period.
    let now = Date.now();
    const run = await runParquetMaintenance({ objects, location, fence, now: () => now }, POLICY);
    expect(run).toMatchObject({ filesRewritten: 12, filesAdded: 2, snapshotsExpired: 0, filesDeleted: 0, orphansDeleted: 0 });
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });
    expect((await objects.list('compact/')).filter((k) => k.endsWith('.parquet'))).toHaveLength(14);
    // After the grace period the replaced files are deleted; the reader's view is unchanged.
    now += REPLACED_FILE_GRACE_MS + 1;
    const later = await runParquetMaintenance({ objects, location, fence, now: () => now }, POLICY);
    expect(later).toMatchObject({ filesRewritten: 0, filesAdded: 0, filesDeleted: 12, orphansDeleted: 0 });
    expect((await objects.list('compact/')).filter((k) => k.endsWith('.parquet'))).toHaveLength(2);
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });
    expect(later.bytesAfter).toBeLessThan(run.bytesBefore);
  });

  it('a replaced file goes only once this process has seen it replaced for the grace period: a compaction stamped by a clock 20 minutes behind, or whose marker waited 16 minutes for the lock, keeps its files for a search that listed them', async () => {
    for (const how of ['skewed', 'waited'] as const) {
      const { location, objects, seqMax } = await locationWith(`grace-${how}`, 4, 20);
      const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/grace-${how}`, connectionId: 's3' });
      onTestFinished(() => source.close());
      const listed = await source.listFiles();
      // Time passes on both clocks alike: the wall clock and the monotonic one seen ages are on.
      let now = Date.now();
      const monotonicMs = () => now;
      const seen = new Map<string, number>();
      const policy = { ...POLICY, removeOrphanFiles: false };
      if (how === 'skewed') {
        // Another node compacted with its clock 20 minutes behind; this one runs maintenance next.
        expect((await compactParquetLocation({ objects, location, fence, now: () => now - 20 * 60_000 }, POLICY.targetFileSizeBytes)).filesRewritten).toBe(8);
        expect(await runParquetMaintenance({ objects, location, fence, now: () => now, replacedSeen: seen, monotonicMs }, policy)).toMatchObject({ filesRewritten: 0, filesDeleted: 0 });
      } else {
        // The marker's turn of the commit lock comes 16 minutes after the compaction stamped it.
        const waiting = { ...fence, serialize: async <T>(turn: () => Promise<T>) => ((now += 16 * 60_000), turn()) };
        expect(await runParquetMaintenance({ objects, location, fence: waiting, now: () => now, replacedSeen: seen, monotonicMs }, policy)).toMatchObject({ filesRewritten: 8, filesDeleted: 0 });
      }
      // The search that listed the files before the swap reads them all.
      const rows = (await Promise.all(listed.map(async (file) => (await readWholeAuditParquet(await source.open(file))).length))).reduce((a, b) => a + b, 0);
      expect(rows).toBe(seqMax);
      expect(seen.size).toBe(8);
      now += REPLACED_FILE_GRACE_MS - 1;
      expect(await runParquetMaintenance({ objects, location, fence, now: () => now, replacedSeen: seen, monotonicMs }, policy)).toMatchObject({ filesDeleted: 0 });
      now += 1;
      expect(await runParquetMaintenance({ objects, location, fence, now: () => now, replacedSeen: seen, monotonicMs }, policy)).toMatchObject({ filesDeleted: 8 });
      expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });
    }
  });

  it("the node's own clock stepped forward 20 minutes right after a compaction: the next run deletes no replaced file, a search that listed them reads them; once seen for the grace on the monotonic clock they go (review)", async () => {
    // Goal: how long this process has seen a file replaced is counted on a clock a step of the wall clock does not move.
    const { location, objects, seqMax } = await locationWith('grace-stepped', 4, 20);
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/grace-stepped`, connectionId: 's3' });
    onTestFinished(() => source.close());
    const listed = await source.listFiles();
    let stepMs = 0;
    let elapsedMs = 0;
    const context = { objects, location, fence, now: () => Date.now() + stepMs, replacedSeen: new Map<string, number>(), monotonicMs: () => elapsedMs };
    const policy = { ...POLICY, removeOrphanFiles: false };
    expect(await runParquetMaintenance(context, policy)).toMatchObject({ filesRewritten: 8, filesDeleted: 0 });
    // NTP steps a slow clock forward; a few seconds pass.
    stepMs = 20 * 60_000;
    elapsedMs = 5_000;
    expect(await runParquetMaintenance(context, policy)).toMatchObject({ filesDeleted: 0 });
    const rows = (await Promise.all(listed.map(async (file) => (await readWholeAuditParquet(await source.open(file))).length))).reduce((a, b) => a + b, 0);
    expect(rows).toBe(seqMax);
    elapsedMs = REPLACED_FILE_GRACE_MS;
    expect(await runParquetMaintenance(context, policy)).toMatchObject({ filesDeleted: 8 });
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });
  });

  it('a replaced file stamped an hour past the grace goes at the first run of a process that never saw it (restarted between runs)', async () => {
    const { location, objects } = await locationWith('grace-restarted', 4, 20);
    const now = Date.now();
    await compactParquetLocation({ objects, location, fence, now: () => now - REPLACED_FILE_GRACE_MS - 61 * 60_000 }, POLICY.targetFileSizeBytes);
    expect(await runParquetMaintenance({ objects, location, fence, now: () => now, replacedSeen: new Map() }, { ...POLICY, removeOrphanFiles: false, compact: false })).toMatchObject({ filesDeleted: 8 });
  });

  it("an erasure deposed before its deletes leaves the replaced files, sends none, is not done; maintenance then deletes an erasure's replaced files with no grace", async () => {
    const { location, objects } = await locationWith('erasure-deposed', 4, 20);
    const now = Date.now();
    let leading = true;
    const erasing = { term: 1, mayCommit: () => leading };
    const erased = [3];
    const erase = rewriteParquetRows(
      { objects, location, fence: erasing, now: () => now, onStep: async (step) => void (step === 'rewrite-committed' && (leading = false)) },
      { seqs: erased, rewrite: (row) => (erased.includes(row.seq as number) && row.query !== 'erased' ? { ...row, query: 'erased' } : undefined) },
    );
    await expect(erase).rejects.toMatchObject({ code: 'AUDIT_NOT_LEADER', message: expect.stringContaining("an erasure's deletion of replaced files of s3://pqt/erasure-deposed stopped after deleting 0 of 1 objects") });
    const holdingOriginal = async () => (await rowsOfEveryFile(objects, location)).filter((row) => row.seq === 3 && row.query !== 'erased').length;
    expect(await holdingOriginal()).toBe(1);
    // The next leader's maintenance, just started (nothing seen), within the grace: the erasure's replaced file goes.
    expect(await runParquetMaintenance({ objects, location, fence, now: () => now, replacedSeen: new Map() }, { ...POLICY, removeOrphanFiles: false, compact: false })).toMatchObject({ filesDeleted: 1 });
    expect(await holdingOriginal()).toBe(0);
  });

  it('a deposed node deletes no replaced file: the run stops with AUDIT_NOT_LEADER and the files stay for the leader', async () => {
    const { location, objects } = await locationWith('grace-deposed', 4, 20);
    const now = Date.now();
    await compactParquetLocation({ objects, location, fence: { term: 2, mayCommit: () => true }, now: () => now }, POLICY.targetFileSizeBytes);
    const parquetFiles = async () => (await objects.list('grace-deposed/')).filter((key) => key.endsWith('.parquet')).length;
    expect(await parquetFiles()).toBe(10);
    const deposed = { term: 1, mayCommit: () => false };
    await expect(runParquetMaintenance({ objects, location, fence: deposed, now: () => now + REPLACED_FILE_GRACE_MS + 60_000 }, { ...POLICY, removeOrphanFiles: false, compact: false })).rejects.toMatchObject({
      code: 'AUDIT_NOT_LEADER',
      message: expect.stringContaining('deletion of replaced files of s3://pqt/grace-deposed stopped after deleting 0 of 8 objects'),
    });
    expect(await parquetFiles()).toBe(10);
  });

  it('a sweep committing during the compaction loses nothing; a second compaction of the day adds the new files', async () => {
    const { location, objects } = await locationWith('race', 4, 20);
    let sweep: Promise<unknown> | undefined;
    const result = await compactParquetLocation(
      {
        objects,
        location,
        now: Date.now,
        fence,
        // Between writing the first day's compacted files and its swap, a sweep commits more events.
        onStep: async (step) => {
          if (step === 'compaction-written') await (sweep ??= commitParquetBatch(objects, location, events(81, 20), { term: 1, nowMs: T0, afterSeq: 80, mayCommit: () => true }));
        },
      },
      POLICY.targetFileSizeBytes,
    );
    await sweep;
    expect(result.filesRewritten).toBe(8);
    expect(await readerCounts(location, objects)).toEqual({ files: 4, rows: 100, distinct: 100 });
    const again = await compactParquetLocation({ objects, location, now: Date.now, fence }, POLICY.targetFileSizeBytes);
    expect(again).toMatchObject({ filesRewritten: 4, filesAdded: 2, daysLost: 0 });
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: 100, distinct: 100 });
    expect([...(await readCompactions(objects, location)).values()].map((c) => c.generation).sort()).toEqual([1, 1, 2, 2]);
  });

  it('a file replaced and deleted while the compaction reads (an erasure\'s swap) leaves its day to the next pass; one lost outright fails the run naming it', async () => {
    const { location, objects, seqMax } = await locationWith('vanished', 4, 20);
    const [first] = liveParquetFiles(await readParquetLog(objects, location)).files;
    // Another writer swaps the location's files (a compaction, as an erasure's rewrite does) and
    // deletes the first at once, just as this compaction fetches it.
    const swapped = vanishingOnRead(objects, first!.key, () => compactParquetLocation({ objects, location, now: Date.now, fence }, POLICY.targetFileSizeBytes));
    const result = await compactParquetLocation({ objects: swapped, location, now: Date.now, fence }, POLICY.targetFileSizeBytes);
    // Both days lost to the other writer: the first for its vanished file, the second for its generation.
    expect(result).toEqual({ filesRewritten: 0, filesAdded: 0, smallFilesAdded: 0, daysLost: 2 });
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });

    // A live file that is simply gone is lost data: its day is left as it is, the other day is
    // compacted, and the run does every other step, then fails naming the file.
    const lost = await locationWith('lost-file', 4, 20);
    const [gone] = liveParquetFiles(await readParquetLog(lost.objects, lost.location)).files;
    await lost.objects.delete(gone!.key);
    const pass = await compactParquetLocation({ objects: lost.objects, location: lost.location, now: Date.now, fence }, POLICY.targetFileSizeBytes);
    expect(pass).toEqual({ filesRewritten: 4, filesAdded: 1, smallFilesAdded: 1, daysLost: 0, lostFiles: [lost.objects.url(gone!.key)] });
    await expect(runParquetMaintenance({ objects: lost.objects, location: lost.location, fence, now: Date.now, checkpointIntervalMarkers: 1 }, POLICY)).rejects.toThrow(
      `a live data file of s3://${BUCKET}/lost-file does not exist: ${lost.objects.url(gone!.key)}; its rows are missing from the tier (the rest of this run was done)`,
    );
    // The rest was done: the run wrote its log checkpoint.
    expect((await readParquetLog(lost.objects, lost.location)).checkpoint).toBeDefined();
  });

  it("a compaction that lost its day's generation to another writer adds nothing and deletes the files it wrote", async () => {
    const { location, objects, seqMax } = await locationWith('lost', 4, 20);
    // Another writer (a deposed leader's maintenance) took both days' next generation first.
    const takeBothDays = async () => {
      for (const date of ['2026-05-01', '2026-05-02']) {
        const taken = { format: 'auditlake-parquet-compaction/1', term: 9, committedAtMs: 0, eventDate: date, generation: 1, replaced: [{ key: `lost/event_date=${date}/part-none.parquet`, eventDate: date, rows: 1, bytes: 1, tsMin: 0, tsMax: 0 }], files: [] };
        await objects.putIfAbsent(compactionKey(location, date, 1), JSON.stringify(taken), 'application/json');
      }
    };
    // After this run read the log and wrote its files, before its swap.
    const result = await compactParquetLocation({ objects, location, now: Date.now, fence, onStep: (step) => (step === 'compaction-written' ? takeBothDays() : undefined) }, POLICY.targetFileSizeBytes);
    expect(result).toEqual({ filesRewritten: 0, filesAdded: 0, smallFilesAdded: 0, daysLost: 2 });
    expect(await readerCounts(location, objects)).toEqual({ files: 8, rows: seqMax, distinct: seqMax });
    // The loser's compacted files were in no marker: deleted at once, nothing left for orphan cleanup.
    expect((await objects.list(`${location.prefix}/event_date=`)).filter((key) => key.includes('/compacted-'))).toEqual([]);
    const run = await runParquetMaintenance({ objects, location, fence, now: () => Date.now() + 1 }, { ...POLICY, targetFileSizeBytes: 1 });
    expect(run.orphansDeleted).toBe(0);
    expect(await readerCounts(location, objects)).toEqual({ files: 8, rows: seqMax, distinct: seqMax });
  });

  it('a compaction that lost its day to an erasure rewrite of it leaves no file holding the erased value', async () => {
    const { location, objects, seqMax } = await locationWith('erased_race', 3, 5);
    const context = { objects, location, fence, now: Date.now };
    // One event of each day (they alternate), erased once the first day's compacted files are written.
    const erased = [3, 4];
    const erase = () => rewriteParquetRows(context, { seqs: erased, rewrite: (row) => (erased.includes(row.seq as number) && row.query !== 'erased' ? { ...row, query: 'erased' } : undefined) });
    const originals = (await rowsOfEveryFile(objects, location)).filter((row) => erased.includes(row.seq as number)).map((row) => row.query);
    expect(originals).toHaveLength(2);
    let erasedOnce = false;
    const onStep = async (step: string) => {
      if (step !== 'compaction-written' || erasedOnce) return;
      erasedOnce = true;
      await erase();
    };
    const result = await compactParquetLocation({ ...context, onStep }, POLICY.targetFileSizeBytes);
    expect(result.daysLost).toBe(2);
    // No object in the location holds the values any more, referenced or not.
    expect((await rowsOfEveryFile(objects, location)).filter((row) => originals.includes(row.query))).toEqual([]);
    expect(await readerCounts(location, objects)).toEqual({ files: expect.any(Number) as unknown, rows: seqMax, distinct: seqMax });
  });

  it('orphan cleanup removes an old unreferenced file and spares a young one', async () => {
    const { location, objects, seqMax } = await locationWith('orphans', 1, 10);
    await objects.put('orphans/event_date=2026-05-01/part-0000000000000001-t0-stray.parquet', new Uint8Array([1, 2, 3]), 'application/vnd.apache.parquet');
    const young = await runParquetMaintenance({ objects, location, fence, now: Date.now }, { ...POLICY, orphanMinAgeMs: 60 * 60 * 1000, targetFileSizeBytes: 1 });
    expect(young.orphansDeleted).toBe(0);
    expect(await objects.exists('orphans/event_date=2026-05-01/part-0000000000000001-t0-stray.parquet')).toBe(true);
    const old = await runParquetMaintenance({ objects, location, fence, now: () => Date.now() + 2 * 60 * 60 * 1000 }, { ...POLICY, orphanMinAgeMs: 60 * 60 * 1000, targetFileSizeBytes: 1 });
    expect(old.orphansDeleted).toBe(1);
    expect(await objects.exists('orphans/event_date=2026-05-01/part-0000000000000001-t0-stray.parquet')).toBe(false);
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });
  });

  it("orphan cleanup leaves another writer's files in the location (Spark's and Hive's part- names): it deletes only names its own writers give", async () => {
    const { location, objects, seqMax } = await locationWith('foreign_parts', 1, 10);
    const foreign = ['foreign_parts/event_date=2026-05-01/part-00000-5b7c4a2e-3f1d-4c8e-9a6b-2d0e1f3a4b5c-c000.snappy.parquet', 'foreign_parts/event_date=2026-05-01/part-0.parquet'];
    const own = 'foreign_parts/event_date=2026-05-01/part-0000000000000001-t0-0badcafe.parquet';
    for (const key of [...foreign, own]) await objects.put(key, new Uint8Array([1, 2, 3]), 'application/vnd.apache.parquet');
    const run = await runParquetMaintenance({ objects, location, fence, now: () => Date.now() + 2 * 60 * 60 * 1000 }, { ...POLICY, orphanMinAgeMs: 60 * 60 * 1000, targetFileSizeBytes: 1 });
    expect(run.orphansDeleted).toBe(1);
    expect(await objects.exists(own)).toBe(false);
    for (const key of foreign) expect(await objects.exists(key)).toBe(true);
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });
  });

  it("orphan cleanup ages files by the store's clock too: a node whose clock runs orphan.min.age.ms ahead spares the files of a batch whose marker is still to come, and an old orphan still goes", async () => {
    const { location, objects, seqMax } = await locationWith('skewed', 1, 10);
    const old = 'skewed/event_date=2026-05-01/part-0000000000000001-t0-stray.parquet';
    await objects.put(old, new Uint8Array([1, 2, 3]), 'application/vnd.apache.parquet');
    // Another leader's batch: its data file written a moment ago, its marker not yet.
    const inFlight = 'skewed/event_date=2026-05-01/part-0000000000000011-t1-0badcafe.parquet';
    await objects.put(inFlight, new Uint8Array([4, 5, 6]), 'application/vnd.apache.parquet');
    const hourMs = 60 * 60 * 1000;
    const aheadMs = hourMs + 60_000;
    // This node's clock is 61 minutes ahead; the store's is not. Measured from the store, the file is young.
    const skewed = await runParquetMaintenance(
      { objects, location, fence, now: () => Date.now() + aheadMs, storeNow: () => storeClockMs(objects, location.prefix) },
      { ...POLICY, orphanMinAgeMs: hourMs, targetFileSizeBytes: 1 },
    );
    expect(skewed.orphansDeleted).toBe(0);
    expect(await objects.exists(inFlight)).toBe(true);
    // Both clocks past the age (the store's moved on as well): both files go, as orphans should.
    const later = await runParquetMaintenance(
      { objects, location, fence, now: () => Date.now() + 2 * aheadMs, storeNow: async () => (await storeClockMs(objects, location.prefix)) + aheadMs },
      { ...POLICY, orphanMinAgeMs: hourMs, targetFileSizeBytes: 1 },
    );
    expect(later.orphansDeleted).toBe(2);
    expect(await objects.exists(old)).toBe(false);
    // The probe objects that read the store's clock are gone again.
    expect((await objects.list('skewed/_auditlake/probes/')).length).toBe(0);
    expect(await readerCounts(location, objects)).toEqual({ files: 2, rows: seqMax, distinct: seqMax });
  });

  it('reads the commit markers before the orphan turn, a few at a time: in the turn only the marker a sweep committed meanwhile is fetched, and its files are spared', async () => {
    const { location, objects, seqMax } = await locationWith('marker_reads', 12, 10);
    const stray = 'marker_reads/event_date=2026-05-01/part-0000000000000001-t0-stray.parquet';
    await objects.put(stray, new Uint8Array([1, 2, 3]), 'application/vnd.apache.parquet');
    // Every GET of a commit marker: how many at once, and how many inside the commit lock.
    let inTurn = false;
    let inFlight = 0;
    let inFlightMax = 0;
    let fetchedInTurn = 0;
    const get = objects.get.bind(objects);
    objects.get = async (key) => {
      if (!key.includes(`/${COMMITS_DIR}/`)) return get(key);
      if (inTurn) fetchedInTurn++;
      inFlightMax = Math.max(inFlightMax, ++inFlight);
      try {
        return await get(key);
      } finally {
        inFlight--;
      }
    };
    // The node's commit lock: a sweep asked first, so it commits one more batch before the run's turn.
    const serialize = async <T>(turn: () => Promise<T>): Promise<T> => {
      await commitParquetBatch(objects, location, events(seqMax + 1, 10), { term: 1, nowMs: T0, afterSeq: seqMax, mayCommit: () => true });
      inTurn = true;
      try {
        return await turn();
      } finally {
        inTurn = false;
      }
    };
    // No file is small enough to compact (target 1 byte): the orphan cleanup's is the run's only turn.
    const run = await runParquetMaintenance({ objects, location, fence: { ...fence, serialize }, now: () => Date.now() + 2 * 60 * 60 * 1000 }, { ...POLICY, orphanMinAgeMs: 60 * 60 * 1000, targetFileSizeBytes: 1 });
    expect(run.orphansDeleted).toBe(1);
    expect(await objects.exists(stray)).toBe(false);
    expect(fetchedInTurn).toBe(1);
    expect(inFlightMax).toBeGreaterThan(1);
    expect(inFlightMax).toBeLessThanOrEqual(OBJECT_REQUESTS_IN_FLIGHT_MAX);
    expect(await readerCounts(location, objects)).toEqual({ files: 26, rows: seqMax + 10, distinct: seqMax + 10 });
  });

  it("a run's listings do not grow with the history: commit markers its checkpoint covers only until packed, no other location's objects", async () => {
    // A year of 10-second sweeps leaves ~3M commit markers: a run that listed the whole location
    // (four times: bytes before and after, replaced files, orphans) would page through all of them
    // and hold every key in memory.
    const { location, objects } = await locationWith('long', 40, 2);
    await objects.put('long/earlier/event_date=2026-05-01/part-0000000000000001-t0-abc.parquet', new Uint8Array(1000), 'application/vnd.apache.parquet');
    // Writes a checkpoint over the 40 markers at the end of the run.
    await runParquetMaintenance({ objects, location, fence, now: Date.now, checkpointIntervalMarkers: 1 }, { ...POLICY, targetFileSizeBytes: 1 });
    for (let c = 0; c < 3; c++) await commitParquetBatch(objects, location, events(81 + 2 * c, 2), { term: 1, nowMs: T0, afterSeq: 80 + 2 * c, mayCommit: () => true });
    const listed: string[] = [];
    const list = objects.list.bind(objects);
    const listObjects = objects.listObjects.bind(objects);
    objects.list = async (prefix, options) => {
      const keys = await list(prefix, options);
      listed.push(...keys);
      return keys;
    };
    objects.listObjects = async (prefix, options) => {
      const found = await listObjects(prefix, options);
      listed.push(...found.map((object) => object.key));
      return found;
    };
    const run = await runParquetMaintenance({ objects, location, fence, now: Date.now, checkpointIntervalMarkers: 1000 }, { ...POLICY, removeOrphanFiles: true, targetFileSizeBytes: 1 });
    // The three markers after the checkpoint (read more than once: before the orphan turn and in
    // it); those it covers are listed only by marker packing, which deletes them once packed
    // (test/marker-packs.test.ts: a run then lists none of them), here fewer than a pack.
    const markersListed = listed.filter((key) => key.startsWith(`long/${COMMITS_DIR}/`));
    expect(new Set(markersListed.filter((key) => key > `long/${COMMITS_DIR}/0000000000000080`)).size).toBe(3);
    expect(new Set(markersListed.filter((key) => key < `long/${COMMITS_DIR}/0000000000000080`)).size).toBe(40);
    expect(listed.filter((key) => !key.startsWith('long/event_date=') && !key.startsWith('long/_auditlake/'))).toEqual([]);
    // Bytes are this location's data files: 43 commits of two days each.
    const data = (await listObjects('long/event_date=')).reduce((sum, object) => sum + object.bytes, 0);
    expect(run.bytesBefore).toBe(data);
    expect(run.bytesAfter).toBe(data);
  });

  it("orphan cleanup never deletes another location's files below this one (an earlier path, a warehouse)", async () => {
    const { location, objects } = await locationWith('outer', 1, 10);
    const others = [
      'outer/earlier/event_date=2026-05-01/part-0000000000000001-t0-abc.parquet',
      'outer/warehouse/ops/audit/data/event_time_day=2026-05-01/00001-t1-abc.parquet',
      'outer/notes/file.parquet',
    ];
    for (const key of others) await objects.put(key, new Uint8Array([1, 2, 3]), 'application/vnd.apache.parquet');
    const run = await runParquetMaintenance({ objects, location, fence, now: () => Date.now() + 2 * 60 * 60 * 1000 }, { ...POLICY, orphanMinAgeMs: 60 * 60 * 1000, targetFileSizeBytes: 1 });
    expect(run.orphansDeleted).toBe(0);
    for (const key of others) expect(await objects.exists(key)).toBe(true);
  });
});
