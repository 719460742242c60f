import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { ObjectStore } from './object-store.js';
import { checkpointKey, listCheckpointKeys, checkpointKeySeq, parseCheckpoint, readNewestCheckpoint, type LoadedCheckpoint, type ParquetCheckpoint } from './parquet-checkpoint.js';
import { markerKeySeq, parquetDataPrefix, type CommitMarker, type CommittedFile } from './parquet-committer.js';
import { liveParquetFiles, ParquetLogCache, type CompactionMarker, type ParquetCompactionContext, type ParquetLog } from './parquet-compaction.js';
import type { S3Location } from './s3-location.js';

/**
 * A checkpoint is written once this many commit markers follow the newest one. A reader folds at
 * most about this many markers (one GET each, 8 in flight) on top of one checkpoint GET: at a
 * sustained 1,000 events/s a sweep commits a marker per 5,000 events, ~17,000 a day, so a
 * checkpoint comes every ~1.5 hours of such load and a node's start reads ~1,000 small markers,
 * not millions. Each checkpoint holds every live file (compaction keeps them few), so a much
 * smaller interval would spend more on writing and storing checkpoints than readers save.
 */
export const PARQUET_CHECKPOINT_INTERVAL_MARKERS = 1000;

/**
 * A checkpoint is also written once this many compaction markers are above the newest one's
 * generations (and a commit marker follows it, which names the new checkpoint): every read of the
 * log lists the compaction markers no checkpoint folds (packing takes only folded ones), and a
 * location of few commits — a checkpoint every 1,000 could be months apart — would otherwise let
 * them pile up, one per compacted day and run. 100 is about four days of hourly runs.
 */
export const PARQUET_CHECKPOINT_INTERVAL_COMPACTIONS = 100;

/** The state a checkpoint records, folded from `log` (its base checkpoint, and the markers on top). */
export function checkpointState(log: Pick<ParquetLog, 'checkpoint' | 'markers' | 'compactions'>): Pick<ParquetCheckpoint, 'files' | 'generations' | 'erasureSeqs' | 'replaced'> {
  const { files, replaced } = liveParquetFiles(log);
  const generations: Record<string, number> = { ...(log.checkpoint?.checkpoint.generations ?? {}) };
  for (const c of log.compactions) generations[c.eventDate] = Math.max(generations[c.eventDate] ?? 0, c.generation);
  const erasureSeqs = [...(log.checkpoint?.checkpoint.erasureSeqs ?? []), ...log.markers.flatMap((m) => m.erasureSeqs ?? [])];
  return {
    files: [...files].sort((a, b) => a.key.localeCompare(b.key)),
    generations: Object.fromEntries(Object.entries(generations).sort(([a], [b]) => a.localeCompare(b))),
    erasureSeqs: [...new Set(erasureSeqs)].sort((a, b) => a - b),
    replaced,
  };
}

export interface ParquetCheckpointWrite {
  key: string;
  /** False when another writer created this checkpoint first (it folds the same markers). */
  written: boolean;
  markersFolded: number;
}

/**
 * Writes a checkpoint of the log at `context.location` when at least `minMarkers` commit markers
 * follow the newest checkpoint, or at least one does and `minCompactions` compaction markers are
 * above its generations; returns undefined otherwise (or when the node may no longer commit). The log is read twice: the compaction markers folded are those of the first read,
 * the commit markers those of the second, listed after them. Every compaction marker folded was
 * thus created before the last commit listing began, and its writer had read only commit markers
 * that existed then: every file it names belongs to a commit marker folded here, or to an earlier
 * compaction of its day (generations are taken in order), so it applies or not exactly as it
 * does in a fold of the whole log. A writer whose view of compactions is stale (a cache, a slow
 * listing) folds fewer generations and says so in `generations`; readers fold the rest. The
 * checkpoint is created only if absent: two writers of the same key fold the same commit markers,
 * and each is exact for the generations it declares, so the first wins and the other is dropped.
 * `replaced` is pruned to the files still in the bucket (a deleted file never comes back: every
 * name is attempt-unique), so it does not grow with the log's age.
 */
export function writeParquetCheckpoint(
  context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence' | 'now' | 'log'>,
  minMarkers = PARQUET_CHECKPOINT_INTERVAL_MARKERS,
  minCompactions = PARQUET_CHECKPOINT_INTERVAL_COMPACTIONS,
): Promise<ParquetCheckpointWrite | undefined> {
  return oneWriterAtATime(context.objects.url(context.location.prefix), () => writeCheckpointNow(context, minMarkers, minCompactions));
}

/**
 * Checkpoint writes of this process to one location (by its URL), one after the other: the
 * sweeper's background writer and maintenance's would otherwise interleave, and one with an older
 * view of compactions, comparing with the newest checkpoint before the other's create landed,
 * wrote the newest checkpoint folding less (second review). Neither waits on a sweep: sweeps do
 * not take this, only checkpoint writers.
 */
const checkpointWrites = new Map<string, Promise<unknown>>();

function oneWriterAtATime<T>(location: string, write: () => Promise<T>): Promise<T> {
  const result = (checkpointWrites.get(location) ?? Promise.resolve()).then(write);
  const settled = result.catch(() => undefined);
  checkpointWrites.set(location, settled);
  void settled.then(() => {
    if (checkpointWrites.get(location) === settled) checkpointWrites.delete(location);
  });
  return result;
}

async function writeCheckpointNow(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence' | 'now' | 'log'>, minMarkers: number, minCompactions: number): Promise<ParquetCheckpointWrite | undefined> {
  // A writer that waited its turn may have stopped leading meanwhile: no log read for nothing.
  if (!context.fence.mayCommit()) return undefined;
  const { objects, location } = context;
  const cache = context.log ?? new ParquetLogCache();
  const first = await cache.read(objects, location);
  const log = await cache.read(objects, location);
  const seen = first.byKey?.compactions ?? new Map<string, CompactionMarker>();
  const compactions = [...(log.byKey?.compactions ?? new Map<string, CompactionMarker>())].filter(([key]) => seen.has(key)).map(([, c]) => c);
  const last = log.markers.at(-1);
  if (last === undefined) return undefined;
  const newestKey = (await listCheckpointKeys(objects, location)).at(-1);
  const newestSeq = newestKey === undefined ? 0 : (checkpointKeySeq(location, newestKey) ?? 0);
  const markersFolded = log.markers.filter((marker) => marker.watermark.seq > newestSeq).length;
  // `compactions` are those above the generations of the checkpoint the log was read from: the newest, but for a reader moving on rarely.
  const due = markersFolded >= minMarkers || (markersFolded > 0 && compactions.length >= minCompactions);
  if (!due || !context.fence.mayCommit()) return undefined;
  const state = checkpointState({ ...(log.checkpoint ? { checkpoint: log.checkpoint } : {}), markers: log.markers, compactions });
  const present = new Set(await objects.list(parquetDataPrefix(location)));
  const checkpoint: ParquetCheckpoint = {
    format: 'auditlake-parquet-checkpoint/1',
    watermark: last.watermark,
    writtenAtMs: context.now(),
    term: context.fence.term,
    ...state,
    replaced: state.replaced.filter((file) => present.has(file.key)),
  };
  const key = checkpointKey(location, last.watermark.seq);
  if (!context.fence.mayCommit() || (await foldsLessThanNewest(objects, location, (await listCheckpointKeys(objects, location)).at(-1), log.checkpoint, state.generations))) return undefined;
  const written = await objects.putIfAbsent(key, JSON.stringify(checkpoint), 'application/json');
  return { key, written, markersFolded };
}

/**
 * True when the newest checkpoint (`newestKey`) folds a day's compactions further than
 * `generations` do: a writer whose view of compactions is older than that checkpoint's writer's
 * (a log read from an older checkpoint, a slow listing). Its checkpoint would be the newest yet
 * fold less: a reader starting from it would miss a generation packed and deleted while the
 * other was the newest (packing takes what the newest checkpoint folds), with nothing loose
 * above it to show the gap. Such a writer writes nothing; the next, reading afresh, does.
 * Writers of this process take turns (oneWriterAtATime), so none writes between another's
 * comparison and its create; writers of two processes (a deposed leader's that still believes it
 * leads) do not, which is why readers also never move to a checkpoint folding less than theirs
 * (readParquetLog).
 */
async function foldsLessThanNewest(objects: ObjectStore, location: S3Location, newestKey: string | undefined, own: LoadedCheckpoint | undefined, generations: Readonly<Record<string, number>>): Promise<boolean> {
  if (newestKey === undefined) return false;
  let newest = own?.key === newestKey ? own.checkpoint : undefined;
  if (newest === undefined) {
    const bytes = await objects.find(newestKey);
    // Deleted since it was listed (an operator's, or a cleanup of a far newer one): write nothing now.
    if (bytes === undefined) return true;
    newest = parseCheckpoint(objects, location, newestKey, bytes);
  }
  return Object.entries(newest.generations).some(([day, generation]) => (generations[day] ?? 0) < generation);
}

/** A file as a checkpoint and a fold must agree on it. */
function fileText(file: CommittedFile): string {
  return JSON.stringify([file.key, file.eventDate, file.rows, file.bytes, file.tsMin, file.tsMax]);
}

/**
 * Checks the newest checkpoint at a location against the whole log (`full`, read without
 * checkpoints): its key names a commit marker, each generation it folded exists, and its live
 * files, generations and erasure records are exactly the fold of the markers it declares it
 * folds; and a reader starting from it lists exactly the files a reader of the whole log lists.
 * Readers trust the newest checkpoint; this is what `auditlake verify` proves of it. A damaged
 * one is refused (`AUDIT_TABLE_INVALID`), a forged one is `AUDIT_INTEGRITY_MISMATCH`, both
 * naming it. Returns the checkpoint's key (undefined: none).
 */
export async function checkParquetCheckpoint(objects: ObjectStore, location: S3Location, full: Pick<ParquetLog, 'markers' | 'compactions'>): Promise<string | undefined> {
  const loaded = await readNewestCheckpoint(objects, location);
  if (loaded === undefined) return undefined;
  const { checkpoint } = loaded;
  const url = objects.url(loaded.key);
  const forged = (why: string) => new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `the Parquet log checkpoint ${url} does not agree with the markers it folds: ${why}`);
  const seq = checkpoint.watermark.seq;
  const foldedMarkers: CommitMarker[] = full.markers.filter((m) => m.watermark.seq <= seq);
  const lastFolded = foldedMarkers.at(-1);
  if (lastFolded === undefined || lastFolded.watermark.seq !== seq || lastFolded.watermark.ingestTs !== checkpoint.watermark.ingestTs) throw forged(`no commit marker ends at its watermark (seq ${seq})`);
  for (const [day, generation] of Object.entries(checkpoint.generations)) {
    if (!full.compactions.some((c) => c.eventDate === day && c.generation === generation)) throw forged(`it folds compactions of ${day} through generation ${generation}, which does not exist`);
  }
  const foldedCompactions = full.compactions.filter((c) => c.generation <= (checkpoint.generations[c.eventDate] ?? 0));
  const expected = checkpointState({ markers: foldedMarkers, compactions: foldedCompactions });
  const got = new Set(checkpoint.files.map(fileText));
  const want = new Set(expected.files.map(fileText));
  const missing = expected.files.find((file) => !got.has(fileText(file)));
  if (missing) throw forged(`it omits or alters live file ${missing.key} (${missing.rows} rows of ${missing.eventDate}): a search would not read them`);
  const extra = checkpoint.files.find((file) => !want.has(fileText(file)));
  if (extra) throw forged(`it lists ${extra.key}, which is not live in the markers it folds`);
  if (checkpoint.files.length !== expected.files.length) throw forged('it lists a file twice');
  const liveKeys = new Set(expected.files.map((file) => file.key));
  const doomedLive = checkpoint.replaced.find((file) => liveKeys.has(file.key));
  if (doomedLive) throw forged(`it lists live file ${doomedLive.key} as replaced (maintenance would delete it)`);
  if (JSON.stringify([...checkpoint.erasureSeqs].sort((a, b) => a - b)) !== JSON.stringify(expected.erasureSeqs)) throw forged('its erasure records differ from those of the commit markers');
  // A reader from the checkpoint lists the markers keyed at or after its seq (readMarkersByKey).
  // One keyed before it that reaches past it (a recovery that continued from a watermark inside a
  // marker's range wrote it, before parquetLogEnd) is never read: its events miss every search.
  const unlisted = full.markers.find((m) => markerKeySeq(m) < seq && m.watermark.seq > seq);
  if (unlisted !== undefined) {
    throw forged(`the commit marker continuing from seq ${unlisted.afterSeq} reaches seq ${unlisted.watermark.seq}, past it, but a reader starting from it lists only markers from seq ${seq} on: the events it adds are missing from every search, and orphan cleanup may delete its files`);
  }
  const fromCheckpoint = liveParquetFiles({
    checkpoint: loaded,
    markers: full.markers.filter((m) => m.watermark.seq > seq),
    compactions: full.compactions.filter((c) => c.generation > (checkpoint.generations[c.eventDate] ?? 0)),
  }).files.map(fileText);
  const whole = liveParquetFiles(full).files.map(fileText);
  if (JSON.stringify([...fromCheckpoint].sort()) !== JSON.stringify([...whole].sort())) throw forged('a reader starting from it would list other files than one folding every marker');
  return loaded.key;
}
