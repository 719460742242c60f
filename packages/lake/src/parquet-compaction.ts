import { randomUUID } from 'node:crypto';
import { AuditError, AuditErrorCode, ORPHAN_MIN_AGE_FLOOR_MS } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { fetchGroupFiles, isSmallFile, smallFileGroups, type CompactionPass, type SmallFileFacts } from './compaction-passes.js';
import type { MaintenanceStep } from './iceberg-maintenance-context.js';
import type { CommitFence } from './iceberg-version-commit.js';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { readNewestCheckpoint, type LoadedCheckpoint, type ReplacedFile } from './parquet-checkpoint.js';
import { PARQUET_DAY, refuseForeignFiles, type CommitMarker, type CommittedFile } from './parquet-committer.js';
import { COMPACTION_MARKER_PACKS, COMPACTION_PACKS_DIR, compactionPacksPrefix, readCompactionPacks } from './parquet-compaction-pack.js';
import { continuesKnown, readMarkersByKey } from './parquet-marker-log.js';
import { markerNameSeq, markerTextDigest, packedMarkerText, packHolds } from './parquet-marker-pack.js';
import type { MarkerPackLimits } from './parquet-marker-packing.js';
import { joinKey, type S3Location } from './s3-location.js';
import { INLINE_TIER_FILE_ENCODER, type TierFileEncoder } from './tier-file-encoding.js';
import { laterWatermark, type Watermark } from './watermark.js';

/** Compaction markers live here, `<event_date>/<generation>.json`, beside the commit markers. */
export const COMPACTIONS_DIR = '_auditlake/compactions';

/** Bytes of small files one compaction pass rewrites at most, as for Iceberg: a pass's memory stays bounded. */
export const PARQUET_COMPACTION_INPUT_BYTES_MAX = 256 * 1024 * 1024;

/**
 * One compaction of one day: `files` replace `replaced`, exactly their rows. Written after the
 * new files and created only if absent, under the day's next generation number: of two
 * compactions of a day racing (a deposed leader's and its successor's) the first wins.
 */
export interface CompactionMarker {
  format: 'auditlake-parquet-compaction/1';
  term: number;
  committedAtMs: number;
  eventDate: string;
  generation: number;
  replaced: CommittedFile[];
  files: CommittedFile[];
  /** True for an erasure's row rewrite: its replaced files are deleted at once, not after a grace period. */
  erasure?: boolean;
}

/**
 * What the readers of a Parquet location agree on: its commits and compactions, in key order —
 * from a checkpoint when one was read (`checkpoint`: then `markers` are those after it and
 * `compactions` those above the generations it folded), else from the start.
 */
export interface ParquetLog {
  checkpoint?: LoadedCheckpoint;
  markers: CommitMarker[];
  compactions: CompactionMarker[];
  /** Both by key, as {@link readParquetLog} read them: a later read fetches only what is new. */
  byKey?: { markers: ReadonlyMap<string, CommitMarker>; compactions: ReadonlyMap<string, CompactionMarker> };
  /**
   * How many markers the log held when the newest checkpoint was last looked for; absent on a
   * log read from the start on purpose (`fromCheckpoint: false`), which never moves to one.
   */
  checkpointSoughtAt?: number;
  /** When it was read (the reader's clock): a later read from it, long after, looks for the newest checkpoint first. */
  readAtMs?: number;
  /** When it was read by the wall clock: long after by either clock is long after. */
  readAtWallMs?: number;
}

/**
 * Commit markers read since the newest checkpoint was last looked for that make the next read
 * look again: a reader kept for months (a node's tier source, a sweeper's cache) moves to each
 * checkpoint maintenance writes, so it holds about one checkpoint interval of markers, not every
 * marker since it was made (~600 bytes each, one per sweep). One LIST per this many commits.
 */
export const CHECKPOINT_RECHECK_MARKERS = 100;

/** True when `generations` fold every day at least as far as `than` does. */
function foldsAtLeast(generations: Readonly<Record<string, number>>, than: Readonly<Record<string, number>>): boolean {
  return Object.entries(than).every(([day, generation]) => (generations[day] ?? 0) >= generation);
}

/**
 * A log read longer ago than this is looked at again from the newest checkpoint: maintenance may
 * meanwhile have packed the markers after what it read and deleted their loose copies (no sooner
 * than the orphan age after the pack, at least ORPHAN_MIN_AGE_FLOOR_MS), and a reader listing only
 * loose markers past its last one would not see them. Half that floor: a reader idle for less
 * cannot have missed a delete. A reader in use (a sweeper, a searched tier) reads far more often.
 */
export const KNOWN_LOG_STALE_MS = ORPHAN_MIN_AGE_FLOOR_MS / 2;

/**
 * The clock readers age what they read by, unless given one: milliseconds that never step back
 * (the process's monotonic clock, from about the wall time it started). Aged by the wall clock
 * alone, a reader whose host clock was set back by hours took a log read long ago for a fresh one
 * and did not look for the checkpoint folding markers packed away meanwhile: their events were
 * missing from its searches until the next commit. The monotonic clock in turn stands still
 * while the host is suspended, so a log is stale once either clock says so (readParquetLog).
 */
export function readerClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export function compactionKey(location: S3Location, eventDate: string, generation: number): string {
  return joinKey(location.prefix, `${COMPACTIONS_DIR}/${eventDate}/${encodeKeyNumber(generation)}.json`);
}

/** The prefix every compaction marker of `location` is listed under. */
export function compactionsPrefix(location: S3Location): string {
  return joinKey(location.prefix, `${COMPACTIONS_DIR}/`);
}

/**
 * The day and generation the compaction marker key `key` (under `prefix`) names, or undefined for
 * another key (never folded, packed or counted among a day's generations; still read, as before).
 */
export function compactionKeyParts(prefix: string, key: string): { day: string; generation: number } | undefined {
  const [day, name, ...more] = key.slice(prefix.length).split('/');
  const generation = name === undefined ? undefined : markerNameSeq(name);
  return day === undefined || !PARQUET_DAY.test(day) || generation === undefined || more.length > 0 ? undefined : { day, generation };
}

/** True when the compaction marker `key` (under `prefix`) is at or below its day's generation in `folded`. */
function foldedCompaction(prefix: string, key: string, folded: Readonly<Record<string, number>>): boolean {
  const parts = compactionKeyParts(prefix, key);
  return parts !== undefined && parts.generation <= (folded[parts.day] ?? 0);
}

/**
 * Per day, the generations missing among `keys` (ranges, both ends in): a day's compactions take
 * generations in order, so every one from the first after its folded one (`folded[day]`) up to
 * the highest present must be there.
 */
function missingGenerations(prefix: string, keys: Iterable<string>, folded: Readonly<Record<string, number>>): Map<string, Array<[number, number]>> {
  const byDay = new Map<string, number[]>();
  for (const key of keys) {
    const parts = compactionKeyParts(prefix, key);
    if (parts === undefined) continue;
    const generations = byDay.get(parts.day);
    if (generations === undefined) byDay.set(parts.day, [parts.generation]);
    else generations.push(parts.generation);
  }
  const missing = new Map<string, Array<[number, number]>>();
  for (const [day, generations] of byDay) {
    let expected = (folded[day] ?? 0) + 1;
    const gaps: Array<[number, number]> = [];
    for (const generation of generations.sort((a, b) => a - b)) {
      if (generation > expected) gaps.push([expected, generation - 1]);
      expected = Math.max(expected, generation + 1);
    }
    if (gaps.length > 0) missing.set(day, gaps);
  }
  return missing;
}

/** A compaction marker's text, parsed; one naming anything but the location's data files is refused (refuseForeignFiles). */
function parseCompactionMarker(location: S3Location, text: string, where: string): CompactionMarker {
  const marker = JSON.parse(text) as CompactionMarker;
  refuseForeignFiles(location, where, marker.replaced, marker.files);
  return marker;
}

/**
 * Every compaction marker at `location` in key order (day, then generation), skipping keys in
 * `known` (kept when their loose copy is gone: a marker never changes), and — listed but never
 * fetched — those at or below a day's generation in `folded` (a checkpoint's): the listing names
 * each marker's day and generation. Maintenance moves markers a checkpoint folds into packs
 * (parquet-compaction-packing.ts) and deletes their loose copies; a reader whose checkpoint does
 * not fold them (an older one) sees generations missing below those listed and takes them from
 * the day's packs, as it takes one listed and gone when fetched (deleted meanwhile).
 * `packsAboveFolded` (a first read from a checkpoint) also lists every pack and takes those
 * holding generations above `folded`: none, from the newest checkpoint (packs hold what it folds),
 * but a reader starting from an older one (the newest deleted as damaged) finds there a day's
 * last generations packed away, with nothing loose above them to show a gap. `everyPack`
 * (a read from the start: verify's) reads every pack, for days whose markers are all packed. A
 * generation neither loose nor packed below one that is present, or listed and gone, or a marker
 * whose packed and loose texts differ, is refused naming it.
 */
export async function readCompactions(
  objects: ObjectStore,
  location: S3Location,
  known: ReadonlyMap<string, CompactionMarker> = new Map(),
  folded: Readonly<Record<string, number>> = {},
  options: { everyPack?: boolean; packsAboveFolded?: boolean } = {},
): Promise<Map<string, CompactionMarker>> {
  const prefix = compactionsPrefix(location);
  // Listed beside the loose markers rather than after them (a first read's latency): a marker
  // deleted before the loose listing, or before its fetch, was deleted once its pack had existed
  // for the orphan age, so that pack was there long before this listing began.
  const everyPackListed = options.everyPack === true || options.packsAboveFolded === true ? objects.list(compactionPacksPrefix(location)) : undefined;
  // Awaited below; handled here too, for a read that fails before it gets there.
  everyPackListed?.catch(() => undefined);
  const keys = (await objects.list(prefix)).filter((key) => !foldedCompaction(prefix, key, folded));
  const digests = new Map<string, string>();
  const gone: string[] = [];
  const read = await mapBounded(
    keys.filter((key) => !known.has(key)),
    OBJECT_REQUESTS_IN_FLIGHT_MAX,
    async (key) => {
      const bytes = await objects.find(key);
      // Gone since the listing: packed and deleted meanwhile; the packs hold it.
      if (bytes === undefined) {
        gone.push(key);
        return undefined;
      }
      const text = new TextDecoder().decode(bytes);
      digests.set(key, markerTextDigest(text));
      return [key, parseCompactionMarker(location, text, `the compaction marker ${objects.url(key)}`)] as const;
    },
  );
  const byKey = new Map([...known].filter(([key]) => !foldedCompaction(prefix, key, folded)));
  for (const entry of read) if (entry !== undefined) byKey.set(entry[0], entry[1]);
  const gaps = missingGenerations(prefix, [...byKey.keys(), ...gone], folded);
  for (const key of gone) {
    const { day, generation } = compactionKeyParts(prefix, key) ?? {};
    if (day !== undefined && generation !== undefined) gaps.set(day, [...(gaps.get(day) ?? []), [generation, generation]]);
  }
  if (options.everyPack === true || options.packsAboveFolded === true || gaps.size > 0) {
    const packed = await readCompactionPacks(objects, location, prefix, options.everyPack === true ? {} : { wanted: gaps, ...(options.packsAboveFolded === true ? { above: folded } : {}) }, everyPackListed);
    for (const { key, text, url } of packed.values()) {
      if (foldedCompaction(prefix, key, folded)) continue;
      const loose = digests.get(key);
      if (loose !== undefined && loose !== markerTextDigest(text)) {
        throw new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `the compaction marker ${objects.url(key)} differs from its copy in the pack ${url}: a marker is packed as it was written, so one of them was changed`);
      }
      if (!byKey.has(key)) byKey.set(key, parseCompactionMarker(location, text, `the compaction marker ${key.slice(prefix.length)} in ${url}`));
    }
    const goneStill = compactionKeyParts(prefix, gone.find((key) => !byKey.has(key)) ?? '');
    const still = goneStill === undefined ? [...missingGenerations(prefix, byKey.keys(), folded)][0] : ([goneStill.day, [[goneStill.generation, goneStill.generation]]] as const);
    if (still !== undefined) {
      const [day, [[from, to]]] = still as [string, [[number, number]]];
      throw new AuditError(
        AuditErrorCode.TABLE_INVALID,
        `compaction markers ${encodeKeyNumber(from)}${to > from ? ` to ${encodeKeyNumber(to)}` : ''} of ${day} are missing from s3://${location.bucket}/${location.prefix}: listed and then gone, or below a later generation of the day (generations are taken in order), and neither ${COMPACTIONS_DIR}/ nor ${COMPACTION_PACKS_DIR}/ holds them (deleted or lost)`,
      );
    }
  }
  return new Map([...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * The files a reader reads: the checkpoint's live files (when the log was read from one), every
 * committed file after it, then each compaction applied in key order — only when every file it
 * replaces is still live, so a compaction can never drop a row twice or add one that is already
 * there. Returns the live files, the compactions that applied, and the files replaced (the
 * checkpoint's, then those of the compactions applied) that may still be in the bucket.
 */
export function liveParquetFiles(log: Pick<ParquetLog, 'checkpoint' | 'markers' | 'compactions'>): { files: CommittedFile[]; applied: CompactionMarker[]; replaced: ReplacedFile[] } {
  const live = new Map<string, CommittedFile>();
  for (const file of log.checkpoint?.checkpoint.files ?? []) live.set(file.key, file);
  // A batch retried under the same names (markers from before attempt-unique names) counts once.
  for (const marker of log.markers) for (const file of marker.files) live.set(file.key, file);
  const applied: CompactionMarker[] = [];
  for (const compaction of log.compactions) {
    if (!compaction.replaced.every((file) => live.has(file.key))) continue;
    for (const file of compaction.replaced) live.delete(file.key);
    for (const file of compaction.files) live.set(file.key, file);
    applied.push(compaction);
  }
  // A checkpoint's entry naming a live file (forged: no honest fold has one) is never deleted.
  const replaced = [
    ...(log.checkpoint?.checkpoint.replaced ?? []).filter((file) => !live.has(file.key)),
    ...applied.flatMap((c) => c.replaced.map((file): ReplacedFile => ({ key: file.key, committedAtMs: c.committedAtMs, ...(c.erasure ? { erasure: true } : {}) }))),
  ];
  return { files: [...live.values()], applied, replaced };
}

/**
 * Where `log` ends, when that is past `watermark` (a new leader's recovery: its replicated
 * watermark may be behind commits of a leader that crashed before replicating them), else
 * `watermark`: the last marker's watermark, or its checkpoint's when no marker follows it. Taken
 * from the log as readers read it, not from the markers keyed at or after `watermark`: a
 * watermark this location's chain does not hold (it moved on at another target) may lie inside a
 * marker's range, the marker keyed before it. Continuing from it tiered that marker's events past
 * it a second time and, with a checkpoint past it, wrote a marker keyed before the checkpoint,
 * which readers starting from the checkpoint never list: its events were missing from every
 * search, and orphan cleanup deleted its files.
 */
export function parquetLogEnd(log: Pick<ParquetLog, 'checkpoint' | 'markers'>, watermark: Watermark): Watermark {
  let end = log.checkpoint === undefined ? watermark : laterWatermark(watermark, log.checkpoint.checkpoint.watermark);
  for (const marker of log.markers) end = laterWatermark(end, marker.watermark);
  return end;
}

/** The generation a new compaction of `date` takes: one past every one the log holds or its checkpoint folded. */
export function nextCompactionGeneration(log: Pick<ParquetLog, 'checkpoint' | 'compactions'>, date: string): number {
  return 1 + Math.max(log.checkpoint?.checkpoint.generations[date] ?? 0, ...log.compactions.filter((c) => c.eventDate === date).map((c) => c.generation));
}

/**
 * Reads a location's log. A first read starts from the newest checkpoint (unless
 * `fromCheckpoint` is false: `auditlake verify` folds every marker, loose and packed, to check
 * the checkpoint against them) and fetches only the commit markers after it and the compaction
 * markers above its generations. Given a log read earlier (`known`, kept on its checkpoint), only the commit
 * markers written since are listed and fetched ({@link readMarkersByKey}: they are created in
 * key order and never change; a reader that missed some, packed meanwhile, reads afresh), and
 * the compaction markers not read before. So a read that must
 * see the log as it is at one moment — in a turn of the commit lock — costs a short listing and
 * the few new markers, when the bulk was read before the turn. Once CHECKPOINT_RECHECK_MARKERS
 * markers were read since it last looked, a read looks for a newer checkpoint and moves to it.
 */
export async function readParquetLog(objects: ObjectStore, location: S3Location, known?: ParquetLog, options: { fromCheckpoint?: boolean; nowMs?: number } = {}): Promise<ParquetLog> {
  const fromStart = known === undefined ? options.fromCheckpoint === false : known.checkpointSoughtAt === undefined;
  const nowMs = options.nowMs ?? readerClockMs();
  const wallMs = Date.now();
  const stale = known?.readAtMs !== undefined && (nowMs - known.readAtMs >= KNOWN_LOG_STALE_MS || wallMs - (known.readAtWallMs ?? wallMs) >= KNOWN_LOG_STALE_MS);
  // A log read from the start (verify's) has no checkpoint to move to: read it all again.
  if (stale && fromStart) return readParquetLog(objects, location, undefined, { fromCheckpoint: false, nowMs });
  let checkpoint = known !== undefined ? known.checkpoint : fromStart ? undefined : await readNewestCheckpoint(objects, location);
  const [read, compactionsRead] = await Promise.all([
    readMarkersByKey(objects, location, known?.byKey?.markers, checkpoint?.checkpoint.watermark.seq),
    readCompactions(objects, location, known?.byKey?.compactions, checkpoint?.checkpoint.generations, { everyPack: fromStart, packsAboveFolded: known === undefined && checkpoint !== undefined }),
  ]);
  // Markers the reader did not know may have been packed (and their loose copies deleted) while it
  // was idle: a first new marker that does not continue from the last it knew says so, as does one
  // listed and gone when fetched (read undefined). Read afresh then — from the newest checkpoint,
  // or from the start (with the packs) for a log read so.
  if (known !== undefined && (read === undefined || !continuesKnown(read, known.byKey?.markers.size ?? 0, checkpoint?.checkpoint.watermark.seq))) {
    return readParquetLog(objects, location, undefined, { fromCheckpoint: !fromStart, nowMs });
  }
  let markers = read as Map<string, CommitMarker>;
  let compactions = compactionsRead;
  // A first read looked for the checkpoint just now: the markers it read all follow it.
  let soughtAt = known?.checkpointSoughtAt ?? markers.size;
  // Idle long enough for markers past what it knew to have been packed: the newest checkpoint folds them.
  if (!fromStart && (stale || markers.size - soughtAt >= CHECKPOINT_RECHECK_MARKERS)) {
    const newest = await readNewestCheckpoint(objects, location);
    soughtAt = markers.size;
    // Only forward: a reader on a checkpoint never moves back to an older one (which would not
    // list the markers the one it is on folded, never read here), nor to a newer one folding
    // fewer compactions of a day (written by a writer with an older view, racing another):
    // the generations between were dropped from this read as folded.
    if (newest !== undefined && newest.checkpoint.watermark.seq > (checkpoint?.checkpoint.watermark.seq ?? -1) && foldsAtLeast(newest.checkpoint.generations, checkpoint?.checkpoint.generations ?? {})) {
      // What the new checkpoint folds is dropped: the markers through its watermark, the
      // compactions at or below its generations (as a first read from it would list them).
      const { seq } = newest.checkpoint.watermark;
      const { generations } = newest.checkpoint;
      const prefix = compactionsPrefix(location);
      markers = new Map([...markers].filter(([, marker]) => marker.watermark.seq > seq));
      compactions = new Map([...compactions].filter(([key]) => !foldedCompaction(prefix, key, generations)));
      soughtAt = markers.size;
      checkpoint = newest;
    }
  }
  return {
    ...(checkpoint ? { checkpoint } : {}),
    markers: [...markers.values()],
    compactions: [...compactions.values()],
    byKey: { markers, compactions },
    ...(fromStart ? {} : { checkpointSoughtAt: soughtAt }),
    readAtMs: nowMs,
    readAtWallMs: wallMs,
  };
}

/**
 * A location's log read again and again by one user (a maintenance run, a sweeper), each marker
 * fetched once ({@link readParquetLog} with the last read as `known`).
 */
export class ParquetLogCache {
  #log: ParquetLog | undefined;
  readonly #now: () => number;

  /** `now`: the clock that ages what it read, with the wall clock ({@link KNOWN_LOG_STALE_MS}; tests pass a manual one). */
  constructor(now: () => number = readerClockMs) {
    this.#now = now;
  }

  async read(objects: ObjectStore, location: S3Location): Promise<ParquetLog> {
    this.#log = await readParquetLog(objects, location, this.#log, { nowMs: this.#now() });
    return this.#log;
  }
}

/** The log as `context` reads it: through its cache when it has one. */
export function readContextLog(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'log'>): Promise<ParquetLog> {
  return context.log ? context.log.read(context.objects, context.location) : readParquetLog(context.objects, context.location);
}

export interface ParquetCompactionContext {
  objects: ObjectStore;
  location: S3Location;
  fence: CommitFence;
  now: () => number;
  /** The object store's clock, as MaintenanceContext.storeNow: orphan cleanup ages files by the earlier of it and `now()`. */
  storeNow?: () => Promise<number>;
  /** Debug/test hook, see {@link MaintenanceStep}. */
  onStep?: (step: MaintenanceStep) => void | Promise<void>;
  /** Encodes compacted files (default: on this thread). */
  encoder?: TierFileEncoder;
  /**
   * Keeps the markers read so far, so each read of the log fetches only new ones (a maintenance
   * run makes one for its steps; a sweeper keeps one per target). Default: each read fetches all.
   */
  log?: ParquetLogCache;
  /** Commit markers after the newest checkpoint that make maintenance write one (default `PARQUET_CHECKPOINT_INTERVAL_MARKERS`; tests set fewer). */
  checkpointIntervalMarkers?: number;
  /** How maintenance packs old commit markers (default `MARKER_PACK_LIMITS`; tests set smaller packs). */
  markerPackLimits?: MarkerPackLimits;
  /** How maintenance packs old compaction markers (default `COMPACTION_PACK_LIMITS`). */
  compactionPackLimits?: MarkerPackLimits;
  /**
   * When this process first saw each replaced file (key → `monotonicMs()`), kept by the caller
   * from one maintenance run of the location to the next: a replaced file is deleted only once
   * seen replaced for the grace period (runParquetMaintenance). Without it, by `committedAtMs` alone.
   */
  replacedSeen?: Map<string, number>;
  /** The clock `replacedSeen` is on, one no step of the wall clock moves (default `performance.now()`; tests pass their own). */
  monotonicMs?: () => number;
}

/**
 * Creates `marker` under its day's generation in a turn of the commit lock (`fence.serialize`),
 * only if absent and while `fence.mayCommit()`; true when this writer's text is what the key
 * holds. A generation the writer planned from a view since overtaken is taken by another
 * writer's marker (false), or — when its loose copy was packed and deleted meanwhile, which takes
 * longer than the orphan age (a stale leader paused that long) — held by a pack of its day: then
 * nothing is created (false), as two texts under one key would stop every later packing run and
 * verify. A pack written between that check and the create (a pause there) holding another text
 * under the generation makes the marker just created go again (false); one holding this very
 * text — packed between the create and the check — is the marker itself.
 */
export async function createCompactionMarker(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence'>, marker: CompactionMarker, what: string): Promise<boolean> {
  const { objects, location, fence } = context;
  const key = compactionKey(location, marker.eventDate, marker.generation);
  const text = JSON.stringify(marker);
  const create = async () => {
    fence.beforeCommit?.();
    if (!fence.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, `no longer the leader; ${what} was not committed (its files are unreferenced)`);
    // Taken by a packed marker: not created at all, so no second text can stay behind a failed delete below.
    const packs = compactionPacksPrefix(location, marker.eventDate);
    if (await packHolds(objects, packs, marker.generation)) return false;
    // Whatever the create answered, the key's text decides: a create that landed and was then
    // told "taken" (a retry of it, by the client or the store) is this marker. Taken as lost, its
    // files were deleted as unreferenced while the marker named them (a fault test).
    await objects.putIfAbsent(key, text, 'application/json');
    if (new TextDecoder().decode(await objects.get(key)) !== text) return false;
    const packed = await packedMarkerText(objects, packs, COMPACTION_MARKER_PACKS, marker.generation);
    if (packed === undefined || packed === text) return true;
    await objects.delete(key);
    return false;
  };
  return fence.serialize ? fence.serialize(create) : create();
}

/** How compaction planning reads a committed Parquet file. */
const COMMITTED_FILE_FACTS: SmallFileFacts<CommittedFile> = { day: (file) => file.eventDate, key: (file) => file.key, bytes: (file) => file.bytes };

export interface ParquetCompactionResult extends CompactionPass {
  /** Days whose compaction lost to another writer's (its new files deleted at once). */
  daysLost: number;
}

/**
 * Day-partition compaction of a Parquet location: per day, the small live files are merged
 * into files near `targetFileSizeBytes` (attempt-unique names) with exactly their rows (sweep-size
 * row groups copied as they are, smaller ones re-encoded: mergeAuditParquetFiles), then one
 * compaction marker per day swaps them — created only if absent under the day's next generation,
 * read back. Until the marker exists readers see the old files, after it the new ones; never
 * both, never neither. The replaced files are deleted later ({@link deleteReplacedParquetFiles}).
 * One call is one pass: it reads at most `inputBytesMax` of small files and says how many it left.
 */
export async function compactParquetLocation(context: ParquetCompactionContext, targetFileSizeBytes: number, inputBytesMax = PARQUET_COMPACTION_INPUT_BYTES_MAX): Promise<ParquetCompactionResult> {
  const { objects, location, fence } = context;
  const log = await readContextLog(context);
  const { groups, left } = smallFileGroups(liveParquetFiles(log).files, COMMITTED_FILE_FACTS, targetFileSizeBytes, inputBytesMax);
  const result: ParquetCompactionResult = { filesRewritten: 0, filesAdded: 0, smallFilesAdded: 0, daysLost: 0, ...(left > 0 ? { smallFilesLeft: left } : {}) };
  const attempt = `t${fence.term}-${randomUUID().slice(0, 8)}`;
  for (const group of groups) {
    const date = (group[0] as CommittedFile).eventDate;
    const fetched = await fetchGroupFiles(group, (file) => objects.find(file.key));
    if ('missing' in fetched) {
      // A file gone since the log was read may have been replaced meanwhile (an erasure
      // rewrites a day's files and deletes the replaced ones at once): then the day changed
      // under this pass, which leaves it to the next, planned from the log as it is then. A
      // file the log still holds live is lost: its day is left as it is and the run, once its
      // other steps are done, fails naming it (failOnLostFiles; review: skipped silently, a
      // lost file went unseen on every run).
      const live = new Set(liveParquetFiles(await readContextLog(context)).files.map((file) => file.key));
      const lost = fetched.missing.filter((file) => live.has(file.key)).map((file) => objects.url(file.key));
      if (lost.length > 0) (result.lostFiles ??= []).push(...lost);
      else result.daysLost++;
      continue;
    }
    const inputs = group.map((file, i) => ({ bytes: fetched.bytes[i] as Uint8Array, name: objects.url(file.key), expectedRows: file.rows }));
    const inputBytes = group.reduce((sum, file) => sum + file.bytes, 0);
    const rowCount = group.reduce((sum, file) => sum + file.rows, 0);
    const rowsPerFile = Math.max(1, Math.floor(targetFileSizeBytes / Math.max(1, inputBytes / Math.max(1, rowCount))));
    const encoded = await (context.encoder ?? INLINE_TIER_FILE_ENCODER).rewrite(inputs, rowsPerFile, { kvMetadata: {}, icebergDataFile: false });
    const files: CommittedFile[] = [];
    for (const [part, file] of encoded.entries()) {
      const key = joinKey(location.prefix, `event_date=${date}/compacted-${attempt}-${part}.parquet`);
      await objects.put(key, file.bytes, 'application/vnd.apache.parquet');
      files.push({ key, eventDate: date, rows: file.rows, bytes: file.bytes.byteLength, tsMin: file.tsMin, tsMax: file.tsMax });
    }
    const rowsIn = group.reduce((sum, file) => sum + file.rows, 0);
    const rowsOut = files.reduce((sum, file) => sum + file.rows, 0);
    if (rowsIn !== rowsOut) throw new Error(`assertion failed: compaction of ${group.length} files read ${rowsIn} rows and wrote ${rowsOut}`);
    const generation = nextCompactionGeneration(log, date);
    const marker: CompactionMarker = { format: 'auditlake-parquet-compaction/1', term: fence.term, committedAtMs: context.now(), eventDate: date, generation, replaced: group, files };
    await context.onStep?.('compaction-written');
    if (!(await createCompactionMarker(context, marker, 'the compaction'))) {
      // Another writer's marker holds the day's generation (an erasure's rewrite, a deposed
      // leader's compaction): these files, named for this attempt alone, are in no marker. Gone
      // now, not after the orphan age: a rewrite that won erased values these still held (review).
      await mapBounded(files, OBJECT_REQUESTS_IN_FLIGHT_MAX, (file) => objects.delete(file.key));
      result.daysLost++;
      continue;
    }
    result.filesRewritten += group.length;
    result.filesAdded += files.length;
    result.smallFilesAdded += files.filter((file) => isSmallFile(file.bytes, targetFileSizeBytes)).length;
  }
  return result;
}
