// Goal: maintenance packs the commit markers at or before the newest log checkpoint
// (`_auditlake/commit-packs/`) and deletes the loose ones only after the orphan age, and every
// reader — from the start (verify), from a checkpoint (a node's tier source, compaction
// planning), a reader kept from before the packing — sees the same
// markers whether loose, packed or both: the same live files and fold, every event once (DuckDB
// over the files listed), through crashes between the pack and the deletes; a from-start read
// GETs ~markers/packSize objects instead of every marker; and an edited pack, a pack and a loose
// marker that differ, or packs that disagree are refused, naming the objects.
import { hash } from 'node:crypto';
import { seededRandom, type StoredEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { countObjectGets, duckdbOverObjects, useEmbeddedS3 } from '../src/testing/index.js';
import {
  checkParquetCheckpoint,
  CHECKPOINTS_DIR,
  COMMITS_DIR,
  commitParquetBatch,
  compactParquetLocation,
  KNOWN_LOG_STALE_MS,
  liveParquetFiles,
  markerKey,
  MARKER_PACKS_DIR,
  ObjectStore,
  packParquetMarkers,
  ParquetTierSource,
  S3Connections,
  readParquetLog,
  REPLACED_FILE_GRACE_MS,
  rewriteParquetRows,
  runParquetMaintenance,
  writeParquetCheckpoint,
  type CommitMarker,
  type CommittedFile,
  type MarkerPackLimits,
  type S3Location,
} from '../src/index.js';

const BUCKET = 'packs';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALMARKERPACKS0000001', secretAccessKey: 'marker-packs-secret-0123456789abcdefgh' };
const s3 = useEmbeddedS3('marker-packs-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };
const POLICY = { removeOrphanFiles: true, orphanMinAgeMs: HOUR_MS, targetFileSizeBytes: 16 * 1024 * 1024, compact: false };

/** Events firstSeq.., each on one of `days` days, ingest order = seq order. */
function events(firstSeq: number, count: number, days = 3): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: `u${seq % 7}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp: T0 + (seq % days) * DAY_MS + seq, ingestTs: T0 + 10 * DAY_MS + seq, seq, term: 1 };
  });
}

/** A location and what its committers wrote: each marker's exact text by key, the reference every reader must give back. */
class Location {
  readonly location: S3Location;
  readonly objects: ObjectStore;
  readonly written = new Map<string, string>();
  seq = 0;
  /** The maintenance clock: advanced past the orphan age so packs written before count as old. */
  nowMs = Date.now();

  /** When each pack was written, by the maintenance clock. */
  readonly #writtenAtMs = new Map<string, number>();

  constructor(prefix: string) {
    this.location = { bucket: BUCKET, prefix };
    this.objects = this.onClock(s3.connections.bucket('s3', BUCKET));
  }

  /**
   * `objects` stamping packs with the maintenance clock (as S3 stamps objects with the time both
   * clocks agree on): a pack is old enough for its loose markers to go once that clock has moved
   * an orphan age past its writing, and a reader on the same clock has been idle as long. Every
   * store a test writes packs or lists through is on it: one that was not stamped packs with the
   * wall clock, and a run an orphan age later by the maintenance clock found them old only when
   * the commits before took under a second (it failed on a loaded machine).
   */
  onClock(objects: ObjectStore): ObjectStore {
    const putIfAbsent = objects.putIfAbsent.bind(objects);
    const listObjects = objects.listObjects.bind(objects);
    objects.putIfAbsent = async (key, body, type) => {
      const created = await putIfAbsent(key, body, type);
      if (created && key.includes(`/${MARKER_PACKS_DIR}/`)) this.#writtenAtMs.set(key, this.nowMs);
      return created;
    };
    objects.listObjects = async (prefix, options) =>
      (await listObjects(prefix, options)).map((object) => ({ ...object, lastModifiedMs: this.#writtenAtMs.get(object.key) ?? object.lastModifiedMs }));
    return objects;
  }

  async commit(markers: number, eventsEach = 1, days = 3): Promise<void> {
    for (let m = 0; m < markers; m++) {
      const { marker } = await commitParquetBatch(this.objects, this.location, events(this.seq + 1, eventsEach, days), { term: 1, nowMs: T0, afterSeq: this.seq, mayCommit: () => true });
      this.written.set(markerKey(this.location, this.seq), JSON.stringify(marker));
      this.seq += eventsEach;
    }
  }

  context(limits: MarkerPackLimits, objects = this.objects) {
    return { objects, location: this.location, fence, now: () => this.nowMs, checkpointIntervalMarkers: 1, markerPackLimits: limits };
  }

  maintain(limits: MarkerPackLimits, objects = this.objects) {
    return runParquetMaintenance(this.context(limits, objects), POLICY);
  }

  /** Maintenance an orphan age later: the packs written so far are old enough for their loose markers to go. */
  maintainLater(limits: MarkerPackLimits, objects = this.objects) {
    this.nowMs += HOUR_MS + 1_000;
    return this.maintain(limits, objects);
  }

  async loose(): Promise<string[]> {
    return this.objects.list(`${this.location.prefix}/${COMMITS_DIR}/`);
  }

  async packs(): Promise<string[]> {
    return this.objects.list(`${this.location.prefix}/${MARKER_PACKS_DIR}/`);
  }

  /** A reader of the location; `clocked`: aged by the maintenance clock (else the real one, never idle long). */
  source(clocked = false): ParquetTierSource {
    const tier = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/${this.location.prefix}`, connectionId: 's3' }, clocked ? { now: () => this.nowMs } : {});
    onTestFinished(() => tier.close());
    return tier;
  }

  /**
   * Checks what every reader sees against what was written: a from-start read gives back every
   * marker's exact content, once, in key order; a reader from the newest checkpoint lists the
   * files that fold lists; the checkpoint agrees with the markers, as verify checks it.
   */
  async expectConsistent(why: string): Promise<CommittedFile[]> {
    const full = await readParquetLog(this.objects, this.location, undefined, { fromCheckpoint: false });
    expect(full.markers.map((m) => JSON.stringify(m)), why).toEqual([...this.written.values()]);
    expect([...(full.byKey?.markers.keys() ?? [])], why).toEqual([...this.written.keys()]);
    const whole = liveParquetFiles(full).files;
    expect(sorted(await this.source().listFiles()), why).toEqual(sorted(whole));
    await checkParquetCheckpoint(this.objects, this.location, full);
    return whole;
  }
}

const fileText = (file: CommittedFile) => JSON.stringify([file.key, file.eventDate, file.rows, file.bytes, file.tsMin, file.tsMax]);
const sorted = (files: readonly { key: string }[]) => (files as CommittedFile[]).map(fileText).sort();

/** The rows of `files` as DuckDB reads them (downloaded as they are): count, distinct seqs, least and greatest seq. */
async function duckdbRows(objects: ObjectStore, files: readonly CommittedFile[]): Promise<{ rows: number; distinct: number; min: number; max: number }> {
  const sql = 'SELECT count(*)::INTEGER AS n, count(DISTINCT seq)::INTEGER AS d, min(seq)::BIGINT AS lo, max(seq)::BIGINT AS hi FROM {files}';
  const [row] = await duckdbOverObjects(objects, files.map((file) => file.key), s3.dir, sql);
  return { rows: Number(row?.['n']), distinct: Number(row?.['d']), min: Number(row?.['lo']), max: Number(row?.['hi']) };
}

/** GETs of every store by the log directory they read. */
const countGets = () => countObjectGets([COMMITS_DIR, MARKER_PACKS_DIR, CHECKPOINTS_DIR]);

/** A pack rewritten with `edit` applied to its markers, under the name a thorough tamperer gives it (range and digest to match). */
async function rewritePack(at: Location, key: string, edit: (markers: Array<{ name: string; marker: string }>) => Array<{ name: string; marker: string }>): Promise<string> {
  const pack = JSON.parse(new TextDecoder().decode(await at.objects.get(key))) as { format: string; markers: Array<{ name: string; marker: string }> };
  const markers = edit(pack.markers);
  const body = JSON.stringify({ ...pack, markers });
  const seq = (name: string) => name.slice(0, 16);
  const renamed = `${at.location.prefix}/${MARKER_PACKS_DIR}/${seq(markers[0]?.name as string)}-${seq(markers.at(-1)?.name as string)}-${hash('sha256', body, 'hex').slice(0, 16)}.json`;
  await at.objects.delete(key);
  await at.objects.put(renamed, body, 'application/json');
  return renamed;
}

/** A marker text with its first file's row count changed. */
function withRowsChanged(text: string): string {
  const marker = JSON.parse(text) as CommitMarker;
  return JSON.stringify({ ...marker, files: marker.files.map((f, i) => (i === 0 ? { ...f, rows: f.rows + 1 } : f)) });
}

describe('commit marker packs', () => {
  it.each([1, 2, 3])('random commits, compactions, erasures and maintenance runs that pack and delete (seed %i): every reader sees every marker as written, the same files, each event once', async (seed) => {
    const next = seededRandom(seed);
    const at = new Location(`prop${seed}`);
    const limits = { packSize: 4, perRunMax: 12 };
    // A reader kept from the start, read now and then: it goes idle across packs and deletes.
    const kept = at.source(true);
    let packed = 0;
    let deleted = 0;
    for (let step = 0; step < 50; step++) {
      const op = next();
      const context = at.context(limits);
      if (op < 0.5 || at.seq === 0) await at.commit(1 + Math.floor(next() * 3), 1 + Math.floor(next() * 3));
      else if (op < 0.6) await compactParquetLocation(context, 16 * 1024 * 1024);
      else if (op < 0.68) {
        const seqs = [1 + Math.floor(next() * at.seq)];
        await rewriteParquetRows(context, { seqs, rewrite: (row) => (seqs.includes(row.seq as number) && row.query !== 'erased' ? { ...row, query: 'erased' } : undefined) });
      } else {
        if (next() < 0.5) at.nowMs += Math.max(HOUR_MS, REPLACED_FILE_GRACE_MS) + 1_000;
        const run = await at.maintain(limits);
        packed += run.markersPacked;
        deleted += run.packedMarkersDeleted;
      }
      await at.expectConsistent(`seed ${seed} step ${step}`);
      if (next() < 0.3) expect(sorted(await kept.listFiles()), `kept reader, step ${step}`).toEqual(sorted(await at.source().listFiles()));
    }
    // Everything packable packed, and every pack's loose markers deleted.
    for (let i = 0; i < 3; i++) await at.maintainLater(limits);
    const run = await at.maintainLater(limits);
    packed += run.markersPacked;
    deleted += run.packedMarkersDeleted;
    expect(packed).toBeGreaterThan(0);
    expect(deleted).toBeGreaterThan(0);
    expect((await at.loose()).length).toBeLessThan(at.written.size);
    const files = await at.expectConsistent('after the last run');
    expect(sorted(await kept.listFiles())).toEqual(sorted(files));
    expect(await duckdbRows(at.objects, files)).toEqual({ rows: at.seq, distinct: at.seq, min: 1, max: at.seq });
  }, 300_000);

  it('a pack written but its markers not yet deleted, a packer killed midway, deletes stopped midway: readers agree at each step, and the next run finishes', async () => {
    const at = new Location('crash');
    const limits = { packSize: 5, perRunMax: 100 };
    await at.commit(23, 2);
    // A packer killed right after writing its second pack.
    const killed = at.onClock(s3.connections.bucket('s3', BUCKET));
    const putIfAbsent = killed.putIfAbsent.bind(killed);
    let packsWritten = 0;
    killed.putIfAbsent = async (key, body, type) => {
      const created = await putIfAbsent(key, body, type);
      if (key.includes(`/${MARKER_PACKS_DIR}/`) && ++packsWritten === 2) throw new Error('killed right after writing a pack');
      return created;
    };
    await expect(at.maintain(limits, killed)).rejects.toThrow(/killed/);
    expect(await at.packs()).toHaveLength(2);
    await at.expectConsistent('two packs written, every marker still loose');
    // The next run packs the rest: 23 markers behind the checkpoint, 4 packs of 5 (3 wait for more), none again.
    expect(await at.maintain(limits)).toMatchObject({ markersPacked: 10, packedMarkersDeleted: 0 });
    expect(await at.packs()).toHaveLength(4);
    expect(await at.maintain(limits)).toMatchObject({ markersPacked: 0, packedMarkersDeleted: 0 });
    expect(await at.loose()).toHaveLength(23);
    await at.expectConsistent('packed and loose');

    // A loose marker that differs from its packed copy: every from-start read and the deleting run refuse, naming both.
    const [firstKey, firstText] = [...at.written][0] as [string, string];
    await at.objects.put(firstKey, withRowsChanged(firstText), 'application/json');
    const both = new RegExp(`${at.objects.url(firstKey)} differs between .*${MARKER_PACKS_DIR}/0000000000000000-0000000000000008-`);
    await expect(readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringMatching(both) });
    await expect(at.maintainLater(limits)).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringContaining(at.objects.url(firstKey)) });
    expect(await at.loose()).toHaveLength(23);
    await at.objects.put(firstKey, firstText, 'application/json');

    // Deletes stopped after 7 (the node lost its lead): readers agree; the next run deletes the rest.
    const stopping = at.onClock(s3.connections.bucket('s3', BUCKET));
    let deletes = 0;
    const deposedAt = 7;
    const deposable = { ...at.context(limits, stopping), fence: { term: 1, mayCommit: () => deletes < deposedAt } };
    const del = stopping.delete.bind(stopping);
    stopping.delete = async (key) => {
      deletes++;
      await del(key);
    };
    await expect(runParquetMaintenance(deposable, POLICY)).rejects.toMatchObject({ code: 'AUDIT_NOT_LEADER' });
    expect(await at.loose()).toHaveLength(23 - deposedAt);
    await at.expectConsistent('some packed markers deleted');
    expect(await at.maintain(limits)).toMatchObject({ markersPacked: 0, packedMarkersDeleted: 20 - deposedAt });
    expect(await at.loose()).toHaveLength(3);
    // A read from the start finds every marker, the newest last.
    expect((await readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).markers.map((m) => JSON.stringify(m))).toEqual([...at.written.values()]);
    // A stale leader paused (longer than the orphan age) before its marker, planned from seq 0:
    // the key's loose copy is gone, so its create succeeds, but the checkpoint folds past it — the
    // copy goes again and the batch is lost, leaving no second text under a packed key.
    // A store recording the markers it creates; `blindOnce`: its first listing of the checkpoints
    // answers as before they were written (the writer paused between that check and its create).
    const created: string[] = [];
    const recording = (blindOnce: boolean): ObjectStore => {
      const objects = at.onClock(s3.connections.bucket('s3', BUCKET));
      const list = objects.list.bind(objects);
      const create = objects.putIfAbsent.bind(objects);
      let hidden = !blindOnce;
      objects.list = async (prefix, options) => (!hidden && prefix.includes(`/${CHECKPOINTS_DIR}/`) ? ((hidden = true), []) : list(prefix, options));
      objects.putIfAbsent = (key, body, type) => (key.includes(`/${COMMITS_DIR}/`) && created.push(key), create(key, body, type));
      return objects;
    };
    const stale = commitParquetBatch(recording(false), at.location, events(1, 2), { term: 1, nowMs: T0, afterSeq: 0, mayCommit: () => true });
    await expect(stale).rejects.toMatchObject({ code: 'AUDIT_OBJECT_EXISTS', message: expect.stringContaining(`commit lost: ${at.objects.url(markerKey(at.location, 0))}`) });
    expect(created).toEqual([]);
    expect(await at.objects.exists(markerKey(at.location, 0))).toBe(false);
    await at.expectConsistent('after a stale leader lost its commit under a packed key');
    // Paused between that check and its create: created, then gone again when a pack holds another text.
    await expect(commitParquetBatch(recording(true), at.location, events(1, 2), { term: 1, nowMs: T0, afterSeq: 0, mayCommit: () => true })).rejects.toMatchObject({ code: 'AUDIT_OBJECT_EXISTS' });
    expect(created).toEqual([markerKey(at.location, 0)]);
    expect(await at.objects.exists(markerKey(at.location, 0))).toBe(false);
    await at.expectConsistent('after a paused stale leader lost its commit under a packed key');
    expect(await at.maintainLater(limits)).toMatchObject({ markersPacked: 0, packedMarkersDeleted: 0 });
    // Commits go on after the packed ones, and readers still agree.
    await at.commit(4, 2);
    const files = await at.expectConsistent('packed markers deleted, commits after them');
    expect(await duckdbRows(at.objects, files)).toEqual({ rows: at.seq, distinct: at.seq, min: 1, max: at.seq });
  }, 120_000);

  for (const packed of [false, true]) {
    it(`a checkpoint${packed ? ' and a pack' : ''} written between a commit's create and its check, folding that very marker: the commit stands`, async () => {
      const at = new Location(packed ? 'honest-packed' : 'honest');
      await at.commit(4, 2);
      // The commit's read-back of its own marker is slow: meanwhile the background checkpointer
      // folds it (and maintenance packs it), so the newest checkpoint lies past its key.
      const slow = at.onClock(s3.connections.bucket('s3', BUCKET));
      const get = slow.get.bind(slow);
      let raced = false;
      slow.get = async (key) => {
        if (!raced && key === markerKey(at.location, at.seq)) {
          raced = true;
          await writeParquetCheckpoint({ objects: at.objects, location: at.location, fence, now: () => at.nowMs }, 1);
          if (packed) await packParquetMarkers({ objects: at.objects, location: at.location, fence, now: () => at.nowMs }, 0, { packSize: 1, perRunMax: 100 });
        }
        return get(key);
      };
      const key = markerKey(at.location, at.seq);
      const { marker } = await commitParquetBatch(slow, at.location, events(at.seq + 1, 2), { term: 1, nowMs: T0, afterSeq: at.seq, mayCommit: () => true });
      expect(raced).toBe(true);
      at.written.set(key, JSON.stringify(marker));
      at.seq += 2;
      expect(await at.objects.exists(key)).toBe(true);
      if (packed) expect(await at.packs()).toContain(`${at.location.prefix}/${MARKER_PACKS_DIR}/0000000000000008-0000000000000008-${hash('sha256', JSON.stringify({ format: 'auditlake-parquet-commit-pack/1', markers: [{ name: '0000000000000008.json', marker: JSON.stringify(marker) }] }), 'hex').slice(0, 16)}.json`);
      await at.expectConsistent('the racing checkpoint folds the commit that stood');
    });
  }

  it('a commit continuing from a seq no marker of the location has (a watermark off its chain) goes ahead, though a checkpoint and a pack lie past it', async () => {
    const at = new Location('off-chain');
    await at.commit(4, 2);
    await at.maintain({ packSize: 4, perRunMax: 100 });
    expect(await at.packs()).toEqual([expect.stringContaining(`/${MARKER_PACKS_DIR}/0000000000000000-0000000000000006-`)]);
    // Keys 0, 2, 4 and 6 are markers; 3 lies in a pack's range and below the checkpoint at 8, yet
    // no marker has it. The commit is not refused (refusing stopped such a node's tiering for good).
    // A sweeper no longer continues from such a seq (its recovery goes on from the log's end,
    // parquetLogEnd; the tiering package's tests), and verify names the result (the next test).
    const { marker } = await commitParquetBatch(at.objects, at.location, events(4, 1), { term: 1, nowMs: T0, afterSeq: 3, mayCommit: () => true });
    expect(JSON.stringify(marker)).toBe(new TextDecoder().decode(await at.objects.get(markerKey(at.location, 3))));
  });

  it('verify names a marker keyed before the newest checkpoint that reaches past it: readers from the checkpoint never list it', async () => {
    const at = new Location('overlap');
    await at.commit(2, 20);
    await writeParquetCheckpoint({ objects: at.objects, location: at.location, fence, now: () => at.nowMs }, 1);
    // What an older recovery wrote after its watermark (30) moved on at another target: 31..50, keyed 30, below the checkpoint at 40.
    await commitParquetBatch(at.objects, at.location, events(31, 20), { term: 2, nowMs: T0, afterSeq: 30, mayCommit: () => true });
    const listed = (await at.source().listFiles()).reduce((n, f) => n + f.rows, 0);
    expect(listed).toBe(40);
    const full = await readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false });
    await expect(checkParquetCheckpoint(at.objects, at.location, full)).rejects.toMatchObject({
      code: 'AUDIT_INTEGRITY_MISMATCH',
      message: expect.stringContaining('the commit marker continuing from seq 30 reaches seq 50, past it, but a reader starting from it lists only markers from seq 40 on'),
    });
  });

  it('a marker moved to another key (under the checkpoint, or anywhere) is refused by every read that lists it, naming it', async () => {
    const at = new Location('moved');
    await at.commit(2, 20);
    await writeParquetCheckpoint({ objects: at.objects, location: at.location, fence, now: () => at.nowMs }, 1);
    await at.commit(1, 20);
    // The marker of 41..60 (keyed 40) moved to key 30, under the checkpoint at 40, where no reader from the checkpoint lists it.
    const text = await at.objects.get(markerKey(at.location, 40));
    await at.objects.putIfAbsent(markerKey(at.location, 30), text, 'application/json');
    await at.objects.delete(markerKey(at.location, 40));
    await expect(readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).rejects.toMatchObject({
      code: 'AUDIT_INTEGRITY_MISMATCH',
      message: `the commit marker ${at.objects.url(markerKey(at.location, 30))} is named for seq 30 but continues from seq 40: a marker is written under its own key, so it was moved or changed`,
    });
    // Moved above the checkpoint instead (key 50): readers from the checkpoint list it and refuse it too.
    await at.objects.delete(markerKey(at.location, 30));
    await at.objects.putIfAbsent(markerKey(at.location, 50), text, 'application/json');
    await expect(at.source().listFiles()).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringContaining('is named for seq 50 but continues from seq 40') });
    // Moved to a name no marker has (a backup copy, say): refused too, where a from-start read took it and a reader from the checkpoint did not.
    await at.objects.delete(markerKey(at.location, 50));
    const bak = `${markerKey(at.location, 30)}.bak`;
    await at.objects.putIfAbsent(bak, text, 'application/json');
    await expect(readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).rejects.toMatchObject({
      code: 'AUDIT_INTEGRITY_MISMATCH',
      message: `${at.objects.url(bak)} is not named as a commit marker is (<16 digits>.json): only markers are written there, so it was put there by hand; move it out of the location`,
    });
    // The folder's own placeholder (an empty object named like the folder, as S3 consoles make one) is no marker, and no fault.
    await at.objects.delete(bak);
    await at.objects.putIfAbsent(markerKey(at.location, 40), text, 'application/json');
    await at.objects.putIfAbsent(`${at.location.prefix}/${COMMITS_DIR}/`, '', 'application/x-directory');
    expect((await readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false })).markers).toHaveLength(3);
    expect((await at.source().listFiles()).reduce((n, f) => n + f.rows, 0)).toBe(60);
  });

  it('a reader kept from before — idle while markers it never read were packed and deleted — and one starting from an older checkpoint list what a fresh reader lists', async () => {
    const at = new Location('idle');
    const limits = { packSize: 5, perRunMax: 100 };
    await at.commit(3);
    // One reader aged by the clock maintenance runs on, one that never looks idle (a clock that
    // does not move): the first must look for the newest checkpoint, the second see the gap.
    const kept = at.source(true);
    const unaged = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/idle`, connectionId: 's3' }, { now: () => 0 });
    onTestFinished(() => unaged.close());
    await kept.listFiles();
    await unaged.listFiles();
    await at.commit(30);
    await at.maintain(limits);
    const olderCheckpoint = (await at.objects.list(`idle/${CHECKPOINTS_DIR}/`)).at(-1) as string;
    await at.commit(12);
    await at.maintainLater(limits);
    await at.maintainLater(limits);
    // Every marker packed, none loose: a reader listing only the loose ones after its last would see nothing new.
    expect(await at.loose()).toEqual([]);
    expect(sorted(await kept.listFiles())).toEqual(sorted(await at.source().listFiles()));
    expect((await kept.listFiles()).reduce((n, f) => n + f.rows, 0)).toBe(at.seq);
    // The first marker after them does not continue from the last the unaged reader knew: it reads afresh.
    await at.commit(2);
    expect(sorted(await unaged.listFiles())).toEqual(sorted(await at.source().listFiles()));
    expect((await unaged.listFiles()).reduce((n, f) => n + f.rows, 0)).toBe(at.seq);
    expect(sorted(await kept.listFiles())).toEqual(sorted(await at.source().listFiles()));
    // The newest checkpoint damaged and deleted by an operator: readers start from the one before
    // it, and the markers between them, packed and no longer loose, are read from their packs.
    for (const key of await at.objects.list(`idle/${CHECKPOINTS_DIR}/`)) if (key > olderCheckpoint) await at.objects.delete(key);
    const fromOlder = await at.source().listFiles();
    expect(fromOlder.reduce((n, f) => n + f.rows, 0)).toBe(at.seq);
    await at.expectConsistent('from the older checkpoint');
  }, 120_000);

  for (const moved of ['performance', 'Date'] as const) {
    it(`a reader on the default clocks finds the markers packed away while it was idle past the stale age by the ${moved === 'performance' ? 'monotonic clock, the wall clock standing still (set back)' : 'wall clock, the monotonic one standing still (a suspended host)'}`, async () => {
      const at = new Location(`idle-by-${moved}`);
      const limits = { packSize: 5, perRunMax: 100 };
      await at.commit(3);
      // Only the clock that moves is faked; the other stands as if set back by what passes.
      vi.useFakeTimers({ toFake: [moved] });
      onTestFinished(() => void vi.useRealTimers());
      // Its own S3 client: one whose clock jumps corrects its signing for the skew, and that correction would outlive the test.
      const connections = new S3Connections(s3.connectionConfigs());
      onTestFinished(() => connections.close());
      const reader = new ParquetTierSource(connections, { mode: 'parquet', path: `s3://${BUCKET}/${at.location.prefix}`, connectionId: 's3' });
      onTestFinished(() => reader.close());
      expect((await reader.listFiles()).reduce((n, f) => n + f.rows, 0)).toBe(3);
      await at.commit(12);
      await at.maintain(limits);
      await at.maintainLater(limits);
      await at.maintainLater(limits);
      expect(await at.loose()).toEqual([]);
      vi.advanceTimersByTime(KNOWN_LOG_STALE_MS + 1);
      expect((await reader.listFiles()).reduce((n, f) => n + f.rows, 0)).toBe(at.seq);
    }, 120_000);
  }

  it('a reader whose listed markers are deleted before it fetches them (packed meanwhile) reads afresh: every marker, no failure', async () => {
    const at = new Location('race');
    const limits = { packSize: 5, perRunMax: 100 };
    await at.commit(3);
    const readAt = Date.now();
    const known = await readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false, nowMs: readAt });
    await at.commit(10);
    await at.maintain(limits);
    // The next read lists the loose markers after those it knew; right then maintenance deletes
    // the loose copies of the packed ones, before the read fetches them.
    const list = at.objects.list.bind(at.objects);
    let raced = false;
    at.objects.list = async (prefix, options) => {
      const keys = await list(prefix, options);
      if (!raced && prefix.endsWith(`/${COMMITS_DIR}/`) && options?.startAfter !== undefined) {
        raced = true;
        await at.maintainLater(limits);
      }
      return keys;
    };
    const looseBefore = await list(`race/${COMMITS_DIR}/`);
    const again = await readParquetLog(at.objects, at.location, known, { fromCheckpoint: false, nowMs: readAt });
    expect(raced).toBe(true);
    expect((await at.loose()).length).toBeLessThan(looseBefore.length);
    expect(again.markers.map((m) => JSON.stringify(m))).toEqual([...at.written.values()]);
    at.objects.list = list;
    await at.expectConsistent('after the race');
  }, 120_000);

  it('a from-start read (verify) GETs the packs and the few loose markers left, not every marker; a reader from the checkpoint GETs no pack', async () => {
    const at = new Location('gets');
    const limits = { packSize: 20, perRunMax: 1_000 };
    const markers = 205;
    await at.commit(markers);
    await at.maintain(limits);
    await at.maintainLater(limits);
    const gets = countGets();
    await at.expectConsistent('packed');
    const fromStart = gets();
    // 10 packs of 20 (the 5 left wait for a full pack), the 5 loose, and the checkpoint verify checks.
    expect(fromStart[MARKER_PACKS_DIR]).toBe(10);
    expect(fromStart[COMMITS_DIR]).toBe(5);
    const before = gets();
    await at.source().listFiles();
    const reader = gets();
    expect((reader[MARKER_PACKS_DIR] ?? 0) - (before[MARKER_PACKS_DIR] ?? 0)).toBe(0);
    console.log(`GETs of a from-start read over ${markers} markers, packs of ${limits.packSize}: ${JSON.stringify(fromStart)}`);
  }, 120_000);

  it('an edited pack is refused, naming it; a thoroughly edited one (renamed to match) fails the check verify runs; packs that disagree name both', async () => {
    const at = new Location('tamper');
    const limits = { packSize: 4, perRunMax: 100 };
    await at.commit(13, 2);
    await at.maintain(limits);
    await at.maintainLater(limits);
    const packs = await at.packs();
    expect(packs).toHaveLength(3);
    expect(await at.loose()).toHaveLength(1);
    await at.expectConsistent('packed');
    const fromStart = () => readParquetLog(at.objects, at.location, undefined, { fromCheckpoint: false });
    const saved = new Map<string, Uint8Array>();
    for (const key of await at.objects.list('tamper/')) saved.set(key, await at.objects.get(key));
    const restore = async () => {
      for (const key of await at.objects.list('tamper/')) if (!saved.has(key)) await at.objects.delete(key);
      for (const [key, bytes] of saved) await at.objects.put(key, bytes);
    };
    const pack = packs[1] as string;
    const text = new TextDecoder().decode(saved.get(pack));

    // A marker's row count changed in place: the pack's name no longer matches what it holds.
    await at.objects.put(pack, text.replace(/\\"rows\\":(\d+)/, (_, n: string) => `\\"rows\\":${Number(n) + 1}`), 'application/json');
    await expect(fromStart()).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringContaining(at.objects.url(pack)) });
    await expect(at.source().listFiles()).resolves.toBeDefined();
    await restore();

    // The same, renamed to match: the fold now disagrees with the checkpoint, which verify checks.
    await rewritePack(at, pack, (markers) => markers.map((m, i) => (i === 0 ? { ...m, marker: withRowsChanged(m.marker) } : m)));
    await expect(checkParquetCheckpoint(at.objects, at.location, await fromStart())).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH' });
    await restore();

    // A marker dropped from a pack (its loose copy gone), renamed to match: the checkpoint check fails.
    await rewritePack(at, pack, (markers) => markers.filter((_, i) => i !== 1));
    await expect(checkParquetCheckpoint(at.objects, at.location, await fromStart())).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH' });
    await restore();

    // A second pack overlapping the first with another text for one of its markers: both named.
    const first = packs[0] as string;
    const forged = await rewritePack(at, first, (markers) => markers.map((m, i) => (i === 0 ? { ...m, marker: withRowsChanged(m.marker) } : m)));
    await at.objects.put(first, saved.get(first) as Uint8Array, 'application/json');
    await expect(fromStart()).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringMatching(new RegExp(`differs between .*(${at.objects.url(first)}|${at.objects.url(forged)}).*(${at.objects.url(forged)}|${at.objects.url(first)})`)) });
    await restore();

    // A pack whose range covers a marker it lacks, held by another pack: both named.
    const lacking = await rewritePack(at, first, (markers) => markers.filter((_, i) => i !== 1));
    await at.objects.put(`tamper/${MARKER_PACKS_DIR}/extra.json`, 'not a pack name: ignored', 'application/json');
    const dropped = (JSON.parse(new TextDecoder().decode(saved.get(first))) as { markers: Array<{ name: string; marker: string }> }).markers.slice(1, 2);
    const holding = await rewritePack(at, pack, (markers) => [...dropped, ...markers]);
    await expect(fromStart()).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringContaining(at.objects.url(lacking)) });
    expect(holding).toBeDefined();
    await restore();

    // A pack that is not JSON (its name matching its content): refused as damaged, naming it.
    const damaged = await rewritePack(at, pack, (markers) => markers);
    const body = '{"format":"auditlake-parquet-commit-pack/1","markers":[';
    await at.objects.delete(damaged);
    const damagedKey = `${damaged.slice(0, damaged.lastIndexOf('-'))}-${hash('sha256', body, 'hex').slice(0, 16)}.json`;
    await at.objects.put(damagedKey, body, 'application/json');
    await expect(fromStart()).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringContaining(at.objects.url(damagedKey)) });
    await restore();
    await at.expectConsistent('restored');
  }, 120_000);
});
