// Goal: maintenance packs the compaction markers the newest log checkpoint folds
// (`_auditlake/compaction-packs/<day>/`) and deletes the loose ones only after the orphan age, so
// the `compactions/` listing every reader makes on every read stops growing with the tier's age;
// every reader — from the start (verify), from the newest checkpoint, from an older one, one kept
// from before the packing — sees the same compactions and files (DuckDB over the files listed);
// a later compaction of a packed day takes the next generation; a checkpoint writer whose view is
// older than the newest checkpoint writes nothing; and a missing generation, a loose marker that
// differs from its packed copy or an edited pack is refused, naming the objects.
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { countObjectGets, duckdbOverObjects, useEmbeddedS3, vanishingOnRead } from '../src/testing/index.js';
import {
  checkParquetCheckpoint,
  checkpointKey,
  CHECKPOINTS_DIR,
  checkpointState,
  commitParquetBatch,
  COMPACTION_PACKS_DIR,
  COMPACTIONS_DIR,
  compactParquetLocation,
  createCompactionMarker,
  KNOWN_LOG_STALE_MS,
  liveParquetFiles,
  nextCompactionGeneration,
  ObjectStore,
  packCompactionMarkers,
  ParquetLogCache,
  ParquetTierSource,
  readCompactions,
  readNewestCheckpoint,
  readParquetLog,
  runParquetMaintenance,
  writeParquetCheckpoint,
  type CommittedFile,
  type CompactionMarker,
  type MarkerPackLimits,
  type S3Location,
} from '../src/index.js';

const BUCKET = 'cpacks';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALCOMPACTIONPACKS001', secretAccessKey: 'compaction-packs-secret-0123456789abcd' };
const s3 = useEmbeddedS3('compaction-packs-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };
const POLICY = { removeOrphanFiles: false, orphanMinAgeMs: HOUR_MS, targetFileSizeBytes: 16 * 1024 * 1024, compact: false };
const DEFAULT_LIMITS: MarkerPackLimits = { packSize: 100, perRunMax: 5_000 };

/** `count` events from `firstSeq`, all on day `day` after T0. */
function dayEvents(day: number, firstSeq: number, count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: `u${seq % 7}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp: T0 + day * DAY_MS + seq, ingestTs: T0 + 100 * DAY_MS + seq, seq, term: 1 };
  });
}

const fileText = (file: CommittedFile) => JSON.stringify([file.key, file.eventDate, file.rows, file.bytes, file.tsMin, file.tsMax]);
const sorted = (files: readonly { key: string }[]) => (files as CommittedFile[]).map(fileText).sort();

/** A location, its maintenance clock, and what was committed. */
class Location {
  readonly location: S3Location;
  readonly objects: ObjectStore;
  seq = 0;
  /** The maintenance clock: advanced past the orphan age so packs written before count as old. */
  nowMs = Date.now();
  readonly #writtenAtMs = new Map<string, number>();

  constructor(prefix: string) {
    this.location = { bucket: BUCKET, prefix };
    this.objects = this.#onClock(s3.connections.bucket('s3', BUCKET));
  }

  /** Packs stamped with the maintenance clock (as in marker-packs.test.ts), so their age follows it. */
  #onClock(objects: ObjectStore): ObjectStore {
    const putIfAbsent = objects.putIfAbsent.bind(objects);
    const listObjects = objects.listObjects.bind(objects);
    objects.putIfAbsent = async (key, body, type) => {
      const created = await putIfAbsent(key, body, type);
      if (created && key.includes('-packs/')) this.#writtenAtMs.set(key, this.nowMs);
      return created;
    };
    objects.listObjects = async (prefix, options) => (await listObjects(prefix, options)).map((object) => ({ ...object, lastModifiedMs: this.#writtenAtMs.get(object.key) ?? object.lastModifiedMs }));
    return objects;
  }

  get events(): number {
    return this.seq;
  }

  /** Two sweep commits of three events on `day`, then a compaction of every day with small files. */
  async compactDay(day: number): Promise<void> {
    for (let c = 0; c < 2; c++) {
      await commitParquetBatch(this.objects, this.location, dayEvents(day, this.seq + 1, 3), { term: 1, nowMs: T0, afterSeq: this.seq, mayCommit: () => true });
      this.seq += 3;
    }
    const result = await compactParquetLocation(this.context(), 1024 * 1024 * 1024);
    expect(result.filesAdded).toBeGreaterThan(0);
  }

  context(limits: MarkerPackLimits = DEFAULT_LIMITS) {
    return { objects: this.objects, location: this.location, fence, now: () => this.nowMs, checkpointIntervalMarkers: 1, compactionPackLimits: limits };
  }

  maintain(limits?: MarkerPackLimits) {
    return runParquetMaintenance(this.context(limits), POLICY);
  }

  /** Maintenance an orphan age later: packs written so far are old enough for their loose markers to go. */
  maintainLater(limits?: MarkerPackLimits) {
    this.nowMs += HOUR_MS + 1_000;
    return this.maintain(limits);
  }

  loose(): Promise<string[]> {
    return this.objects.list(`${this.location.prefix}/${COMPACTIONS_DIR}/`);
  }

  packs(): Promise<string[]> {
    return this.objects.list(`${this.location.prefix}/${COMPACTION_PACKS_DIR}/`);
  }

  source(): ParquetTierSource {
    const tier = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/${this.location.prefix}`, connectionId: 's3' });
    onTestFinished(() => tier.close());
    return tier;
  }

  /**
   * What every reader must agree on: a from-start read (verify's) gives back every compaction
   * marker, as `compactions` holds them, and its checkpoint check passes; a fresh reader from the
   * newest checkpoint lists the fold's files; DuckDB reads every event once from them.
   */
  async expectConsistent(compactions: readonly string[], why: string): Promise<CommittedFile[]> {
    const full = await readParquetLog(this.objects, this.location, undefined, { fromCheckpoint: false });
    expect(full.compactions.map((c) => JSON.stringify(c)), why).toEqual(compactions);
    await checkParquetCheckpoint(this.objects, this.location, full);
    const whole = liveParquetFiles(full).files;
    expect(sorted(await this.source().listFiles()), why).toEqual(sorted(whole));
    const sql = 'SELECT count(*)::INTEGER AS n, count(DISTINCT seq)::INTEGER AS d FROM {files}';
    const [row] = await duckdbOverObjects(this.objects, whole.map((file) => file.key), s3.dir, sql);
    expect({ rows: Number(row?.['n']), distinct: Number(row?.['d']) }, why).toEqual({ rows: this.events, distinct: this.events });
    return whole;
  }

  /** Every compaction marker as a from-start read gives it back, in key order. */
  async compactionTexts(): Promise<string[]> {
    return (await readParquetLog(this.objects, this.location, undefined, { fromCheckpoint: false })).compactions.map((c) => JSON.stringify(c));
  }
}

/** GETs of every store by the log directory they read. */
const countGets = () => countObjectGets([COMPACTIONS_DIR, COMPACTION_PACKS_DIR, CHECKPOINTS_DIR]);

/**
 * A log read on the checkpoint folding generation 1 of day 0, by a clock that stands still (a
 * node's clock far behind the packer's: by it the reader is never idle long enough to look for a
 * newer checkpoint); then generations 2 and 3 are compacted, folded by a newer checkpoint, packed
 * one a pack and their loose copies deleted, so none of day 0's markers is loose.
 */
async function readBeforeGenerationsPackedAway(at: Location): Promise<ParquetLogCache> {
  await at.compactDay(0);
  await at.maintain();
  const readAtMs = at.nowMs;
  const reader = new ParquetLogCache(() => readAtMs);
  await reader.read(at.objects, at.location);
  await at.compactDay(0);
  await at.compactDay(0);
  const one: MarkerPackLimits = { packSize: 1, perRunMax: 100 };
  expect(await at.maintain(one)).toMatchObject({ markersPacked: 3 });
  expect(await at.maintainLater(one)).toMatchObject({ packedMarkersDeleted: 3 });
  expect(await at.loose()).toEqual([]);
  return reader;
}

describe('compaction marker packs', () => {
  it('ten days of compactions: once packed and past the orphan age, a run lists only the current day’s markers; every reader sees the same files; a late compaction takes the next generation', async () => {
    const at = new Location('month');
    for (let day = 0; day < 10; day++) for (let rep = 0; rep < 3; rep++) await at.compactDay(day);
    const compactions = await at.compactionTexts();
    expect(compactions).toHaveLength(30);
    const before = await at.expectConsistent(compactions, 'before any packing');
    const kept = at.source();
    expect(sorted(await kept.listFiles())).toEqual(sorted(before));

    // The run's checkpoint folds all 30; days 0–8 are done (a later day has compactions) and are
    // packed whatever their count; day 9's three wait for a full pack.
    expect(await at.maintain()).toMatchObject({ markersPacked: 27, packedMarkersDeleted: 0 });
    expect(await at.packs()).toHaveLength(9);
    expect(await at.loose()).toHaveLength(30);
    await at.expectConsistent(compactions, 'packed, loose copies within the grace period');
    expect(await at.maintainLater()).toMatchObject({ markersPacked: 0, packedMarkersDeleted: 27 });
    expect((await at.loose()).map((key) => key.slice(`month/${COMPACTIONS_DIR}/`.length))).toEqual(['2026-05-10/0000000000000001.json', '2026-05-10/0000000000000002.json', '2026-05-10/0000000000000003.json']);
    expect(await at.maintainLater()).toMatchObject({ markersPacked: 0, packedMarkersDeleted: 0 });
    await at.expectConsistent(compactions, 'loose copies deleted');
    expect(sorted(await kept.listFiles()), 'a reader kept from before the packing').toEqual(sorted(before));

    // A fresh reader from the checkpoint fetches no pack; a from-start read fetches the 9 packs and the 3 loose markers.
    const gets = countGets();
    await at.source().listFiles();
    expect(gets()[COMPACTION_PACKS_DIR] ?? 0).toBe(0);
    const fresh = gets();
    await readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false });
    const fromStart = gets();
    expect((fromStart[COMPACTION_PACKS_DIR] ?? 0) - (fresh[COMPACTION_PACKS_DIR] ?? 0)).toBe(9);
    expect((fromStart[COMPACTIONS_DIR] ?? 0) - (fresh[COMPACTIONS_DIR] ?? 0)).toBe(3);

    // Late events on a packed day: the compaction takes generation 4 of it, a new key, not a packed one's.
    await at.compactDay(3);
    expect(await at.loose()).toContain(`month/${COMPACTIONS_DIR}/2026-05-04/0000000000000004.json`);
    const withLate = await at.compactionTexts();
    expect(withLate).toHaveLength(31);
    const after = await at.expectConsistent(withLate, 'a late compaction of a packed day');
    expect(sorted(await kept.listFiles()), 'the kept reader, after the late compaction').toEqual(sorted(after));
    // Packed in turn once a checkpoint folds it: day 3 is done, so its one new marker makes a pack of one.
    await at.maintain();
    expect(await at.maintainLater()).toMatchObject({ packedMarkersDeleted: 1 });
    expect(await at.packs()).toHaveLength(10);
    await at.expectConsistent(withLate, 'the late compaction packed');
  });

  it('a reader on an older checkpoint takes the generations packed away since from the day’s packs', async () => {
    const at = new Location('older');
    const reader = await readBeforeGenerationsPackedAway(at);
    // Generation 4 is loose: the reader, whose checkpoint folds only generation 1, sees 2 and 3 missing below it.
    await at.compactDay(0);
    const gets = countGets();
    const log = await reader.read(at.objects, at.location);
    expect(gets()[COMPACTION_PACKS_DIR]).toBe(2);
    expect(log.checkpoint?.checkpoint.generations).toEqual({ '2026-05-01': 1 });
    expect(log.compactions.map((c) => c.generation)).toEqual([2, 3, 4]);
    const compactions = await at.compactionTexts();
    const whole = await at.expectConsistent(compactions, 'four generations, three packed');
    expect(sorted(liveParquetFiles(log).files)).toEqual(sorted(whole));
  });

  it('a reader starting from an older checkpoint (the newest deleted as damaged) takes a day’s last generations, packed away, from the packs', async () => {
    const at = new Location('older-start');
    await readBeforeGenerationsPackedAway(at);
    const compactions = await at.compactionTexts();
    const newest = (await readNewestCheckpoint(at.objects, at.location))?.key as string;
    await at.objects.delete(newest);
    const log = await readParquetLog(at.objects, at.location);
    expect(log.checkpoint?.checkpoint.generations).toEqual({ '2026-05-01': 1 });
    expect(log.compactions.map((c) => c.generation)).toEqual([2, 3]);
    expect(nextCompactionGeneration(log, '2026-05-01')).toBe(4);
    await at.expectConsistent(compactions, 'read from the checkpoint before the deleted newest');
  });

  it('a checkpoint writer whose view of compactions is older than the newest checkpoint writes nothing', async () => {
    const at = new Location('stale');
    const writer = await readBeforeGenerationsPackedAway(at);
    const newest = await readNewestCheckpoint(at.objects, at.location);
    expect(newest?.checkpoint.generations).toEqual({ '2026-05-01': 3 });
    expect(await at.loose()).toEqual([]);
    // Generations 2 and 3 were packed away, none is loose above them: the writer sees none of them.
    await commitParquetBatch(at.objects, at.location, dayEvents(1, at.seq + 1, 3), { term: 1, nowMs: T0, afterSeq: at.seq, mayCommit: () => true });
    at.seq += 3;
    expect(await writeParquetCheckpoint({ objects: at.objects, location: at.location, fence, now: () => at.nowMs, log: writer }, 1)).toBeUndefined();
    expect((await readNewestCheckpoint(at.objects, at.location))?.key).toBe(newest?.key);
    await at.expectConsistent(await at.compactionTexts(), 'after the stale writer');
  });

  it('checkpoint writers of one process take turns: the second sends nothing until the first has written, so a view older than a checkpoint just written never lands after it', async () => {
    const at = new Location('turns');
    await at.compactDay(0);
    // Two stores recording, in one list, each request they send.
    const requests: string[] = [];
    const recording = (name: string): ObjectStore => {
      const objects = s3.connections.bucket('s3', BUCKET);
      const list = objects.list.bind(objects);
      const get = objects.get.bind(objects);
      const putIfAbsent = objects.putIfAbsent.bind(objects);
      objects.list = (prefix, options) => (requests.push(name), list(prefix, options));
      objects.get = (key) => (requests.push(name), get(key));
      objects.putIfAbsent = (key, body, type) => (requests.push(name), putIfAbsent(key, body, type));
      return objects;
    };
    const [one, two] = await Promise.all([
      writeParquetCheckpoint({ objects: recording('one'), location: at.location, fence, now: () => at.nowMs }, 1),
      writeParquetCheckpoint({ objects: recording('two'), location: at.location, fence, now: () => at.nowMs }, 1),
    ]);
    expect(one?.written).toBe(true);
    // The second read the log after the first's checkpoint: no markers follow it.
    expect(two).toBeUndefined();
    expect(requests.indexOf('two')).toBeGreaterThan(requests.lastIndexOf('one'));
  });

  it('a location of few commits gets a checkpoint once enough compaction markers are above the newest, so they are packed rather than listed by every read', async () => {
    const at = new Location('quiet');
    const write = (minCompactions: number) => writeParquetCheckpoint({ objects: at.objects, location: at.location, fence, now: () => at.nowMs }, 1000, minCompactions);
    await at.compactDay(0);
    await at.compactDay(1);
    // Two compaction markers, four commits: not due by either count.
    expect(await write(3)).toBeUndefined();
    await at.compactDay(2);
    expect(await write(3)).toMatchObject({ written: true, markersFolded: 6 });
    expect((await readNewestCheckpoint(at.objects, at.location))?.checkpoint.generations).toEqual({ '2026-05-01': 1, '2026-05-02': 1, '2026-05-03': 1 });
    // No commit since: no marker to name a newer checkpoint by, however few compactions are asked for.
    expect(await write(0)).toBeUndefined();
  });

  it('a reader never moves to a newer checkpoint folding fewer generations of a day than its own (two writers of different views racing)', async () => {
    const at = new Location('fewer');
    await at.compactDay(0);
    await at.compactDay(0);
    await at.maintain();
    const reader = new ParquetLogCache(() => at.nowMs);
    const onIt = await reader.read(at.objects, at.location);
    expect(onIt.checkpoint?.checkpoint.generations).toEqual({ '2026-05-01': 2 });
    await commitParquetBatch(at.objects, at.location, dayEvents(1, at.seq + 1, 3), { term: 1, nowMs: T0, afterSeq: at.seq, mayCommit: () => true });
    at.seq += 3;
    // A newer checkpoint, exact for what it declares, from a writer that saw only generation 1.
    const full = await readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false });
    const last = full.markers.at(-1)?.watermark as { seq: number; ingestTs: number };
    const behind = { format: 'auditlake-parquet-checkpoint/1', watermark: last, writtenAtMs: at.nowMs, term: 1, ...checkpointState({ markers: full.markers, compactions: full.compactions.filter((c) => c.generation === 1) }) };
    await at.objects.put(checkpointKey(at.location, last.seq), JSON.stringify(behind), 'application/json');
    // Idle past KNOWN_LOG_STALE_MS, the reader looks for the newest checkpoint and stays on its own.
    at.nowMs += KNOWN_LOG_STALE_MS + 1_000;
    const after = await reader.read(at.objects, at.location);
    expect(after.checkpoint?.key).toBe(onIt.checkpoint?.key);
    const whole = liveParquetFiles(full).files;
    expect(sorted(liveParquetFiles(after).files)).toEqual(sorted(whole));
    // A fresh reader starting from it lists generation 2 (still loose: packing takes what the newest folds).
    expect(sorted(await at.source().listFiles())).toEqual(sorted(whole));
  });

  it('a stale leader’s compaction under a generation a pack holds (its loose copy deleted) is not created; one created in a pause after that check goes again; one with the packed text stands', async () => {
    const at = new Location('freed');
    for (let rep = 0; rep < 3; rep++) await at.compactDay(0);
    const one: MarkerPackLimits = { packSize: 1, perRunMax: 100 };
    const second = `freed/${COMPACTIONS_DIR}/2026-05-01/0000000000000002.json`;
    const text = new TextDecoder().decode(await at.objects.get(second));
    await at.maintain(one);
    await at.maintainLater(one);
    expect(await at.loose()).toEqual([]);
    const compactions = await at.compactionTexts();
    // Planned long ago from a view where generation 2 was next: another compaction's text.
    const stale: CompactionMarker = { ...(JSON.parse(text) as CompactionMarker), term: 7, committedAtMs: at.nowMs };
    const creates: string[] = [];
    // A store whose first listing of the day's packs answers as before they were written (the
    // writer paused between that check and its create).
    const paused = (): ObjectStore => {
      const objects = s3.connections.bucket('s3', BUCKET);
      const list = objects.list.bind(objects);
      const putIfAbsent = objects.putIfAbsent.bind(objects);
      let hidden = false;
      objects.list = async (prefix, options) => (!hidden && prefix.includes(`/${COMPACTION_PACKS_DIR}/`) ? ((hidden = true), []) : list(prefix, options));
      objects.putIfAbsent = (key, body, type) => (creates.push(key), putIfAbsent(key, body, type));
      return objects;
    };
    const plain = s3.connections.bucket('s3', BUCKET);
    const plainCreate = plain.putIfAbsent.bind(plain);
    plain.putIfAbsent = (key, body, type) => (creates.push(key), plainCreate(key, body, type));
    expect(await createCompactionMarker({ objects: plain, location: at.location, fence }, stale, 'the compaction')).toBe(false);
    expect(creates).toEqual([]);
    expect(await createCompactionMarker({ objects: paused(), location: at.location, fence }, stale, 'the compaction')).toBe(false);
    expect(creates).toEqual([second]);
    expect(await at.objects.exists(second)).toBe(false);
    await at.expectConsistent(compactions, 'the stale compaction deleted again');
    // The same text as the pack's (packed between a create and its check): the marker itself.
    expect(await createCompactionMarker({ objects: paused(), location: at.location, fence }, JSON.parse(text) as CompactionMarker, 'the compaction')).toBe(true);
    await at.expectConsistent(compactions, 'the packed text created loose again');
  });

  it('a compaction marker listed and gone when fetched is taken from its pack; one that no pack holds is refused, naming it', async () => {
    const at = new Location('vanish');
    await at.compactDay(0);
    await at.compactDay(0);
    await at.maintain({ packSize: 1, perRunMax: 100 });
    await at.compactDay(1);
    const day0 = (generation: number) => `vanish/${COMPACTIONS_DIR}/2026-05-01/000000000000000${generation}.json`;
    const second = new TextDecoder().decode(await at.objects.get(day0(2)));
    // Read with no checkpoint to skip by: generation 2, the day's last, is deleted as it is fetched (its pack holds it).
    const read = await readCompactions(vanishingOnRead(at.objects, day0(2)), at.location);
    expect([...read.keys()]).toEqual([day0(1), day0(2), `vanish/${COMPACTIONS_DIR}/2026-05-02/0000000000000001.json`]);
    expect(JSON.stringify(read.get(day0(2)))).toBe(second);
    // Day 2's only marker, in no pack (no checkpoint folds it yet), gone the same way.
    const lost = `vanish/${COMPACTIONS_DIR}/2026-05-02/0000000000000001.json`;
    await expect(readCompactions(vanishingOnRead(at.objects, lost), at.location)).rejects.toMatchObject({
      code: 'AUDIT_TABLE_INVALID',
      message: expect.stringMatching(/compaction markers 0000000000000001 of 2026-05-02 are missing from s3:\/\/cpacks\/vanish: listed and then gone/),
    });
  });

  it('a missing generation, a loose marker unlike its packed copy and an edited pack are refused, naming them; nothing is deleted', async () => {
    const at = new Location('tamper');
    for (let rep = 0; rep < 3; rep++) await at.compactDay(0);
    await at.compactDay(1);
    const second = `tamper/${COMPACTIONS_DIR}/2026-05-01/0000000000000002.json`;
    const text = new TextDecoder().decode(await at.objects.get(second));

    // Generation 2 gone, with no pack holding it, while 3 is there.
    await at.objects.delete(second);
    const missing = /compaction markers 0000000000000002 of 2026-05-01 are missing from s3:\/\/cpacks\/tamper/;
    await expect(readParquetLog(at.objects, at.location)).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringMatching(missing) });
    await expect(readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringMatching(missing) });
    await at.objects.put(second, text, 'application/json');

    // Packed, then the loose copy edited: a from-start read and the packer's delete both refuse.
    expect(await at.maintain()).toMatchObject({ markersPacked: 3 });
    const pack = (await at.packs())[0] as string;
    const edited = text.replace('"term":1', '"term":7');
    expect(edited).not.toBe(text);
    await at.objects.put(second, edited, 'application/json');
    const differs = new RegExp(`${at.objects.url(second)} differs from its copy in the pack ${at.objects.url(pack)}`);
    await expect(readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringMatching(differs) });
    at.nowMs += HOUR_MS + 1_000;
    await expect(packCompactionMarkers(at.context(), HOUR_MS)).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringMatching(differs) });
    expect(await at.loose()).toHaveLength(4);
    await at.objects.put(second, text, 'application/json');

    // The pack edited in place: its name's digest no longer holds.
    const body = new TextDecoder().decode(await at.objects.get(pack));
    await at.objects.put(pack, body.replace('\\"term\\":1', '\\"term\\":7'), 'application/json');
    await expect(readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).rejects.toMatchObject({
      code: 'AUDIT_INTEGRITY_MISMATCH',
      message: expect.stringContaining(`the compaction marker pack ${at.objects.url(pack)} does not hold what its name's digest says`),
    });
    await expect(packCompactionMarkers(at.context(), HOUR_MS)).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH' });
    expect(await at.loose()).toHaveLength(4);
  });
});
