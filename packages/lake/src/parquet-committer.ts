import { randomUUID } from 'node:crypto';
import { AuditError, AuditErrorCode, type StoredEvent } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { checkpointKeySeq, listCheckpointKeys } from './parquet-checkpoint.js';
import { COMMIT_MARKER_PACKS, markerPacksPrefix, packedMarkerText } from './parquet-marker-pack.js';
import { joinKey, type S3Location } from './s3-location.js';
import { INLINE_TIER_FILE_ENCODER, type EncodedTierFile, type TierFileEncoder } from './tier-file-encoding.js';
import type { TierFile } from './tier-source.js';
import type { Watermark } from './watermark.js';

/** Written last, under `<prefix>/_auditlake/commits/`; a batch counts as tiered only once it exists. */
export interface CommitMarker {
  format: 'auditlake-parquet-commit/1';
  term: number;
  committedAtMs: number;
  /** The last tiered event's (ingestTs, seq): the watermark this commit establishes. */
  watermark: Watermark;
  firstSeq: number;
  /** The watermark seq this commit continues from: the marker's key (absent in markers keyed by their last seq). */
  afterSeq?: number;
  files: CommittedFile[];
  /** Seqs of the erasure records the batch holds (absent: none): their rewrite of the tier is pending until `_auditlake/erasures/<seq>.json` exists. */
  erasureSeqs?: number[];
}

/** A data file a marker commits: a tier file whose size is always recorded. */
export type CommittedFile = TierFile & { bytes: number };

export const COMMITS_DIR = '_auditlake/commits';

/** `YYYY-MM-DD` of an epoch-ms time, in UTC. */
export function eventDate(timestampMs: number): string {
  return new Date(timestampMs).toISOString().slice(0, 10);
}

export interface ParquetBatchResult {
  marker: CommitMarker;
  bytes: number;
}

/** Who writes, from where, and whether it still may (asked right before the marker). */
export interface ParquetCommitContext {
  term: number;
  nowMs: number;
  /** The watermark seq the batch continues from; names the marker. */
  afterSeq: number;
  mayCommit: () => boolean;
  beforeCommit?: () => void;
  /** Encodes the data files (default: on this thread). */
  encoder?: TierFileEncoder;
  /** Seqs of the batch's erasure records, recorded in the marker. */
  erasureSeqs?: readonly number[];
}

/**
 * Writes one batch as hive-style day partitions and then its commit marker. Every data file has
 * an attempt-unique name (term and random), so no writer ever overwrites another's file. The
 * marker is named by the watermark the batch continues from and created only if absent: of two
 * writers continuing from the same point — a deposed leader whose writes were in flight and its
 * successor — the first marker wins and the other's files stay unreferenced (orphan cleanup
 * removes them). Markers are read back, so a store that overwrote anyway is caught.
 * `mayCommit()` is asked right before the marker (the leader's lease and term).
 */
export async function commitParquetBatch(objects: ObjectStore, location: S3Location, batch: readonly StoredEvent[], context: ParquetCommitContext): Promise<ParquetBatchResult> {
  const first = batch[0];
  const last = batch[batch.length - 1];
  if (!first || !last) throw new TypeError('commitParquetBatch needs at least one event');
  const attempt = `t${context.term}-${randomUUID().slice(0, 8)}`;
  const byDate = new Map<string, StoredEvent[]>();
  for (const event of batch) {
    const date = eventDate(event.timestamp);
    const list = byDate.get(date);
    if (list) list.push(event);
    else byDate.set(date, [event]);
  }
  const encoder = context.encoder ?? INLINE_TIER_FILE_ENCODER;
  const dates = [...byDate.entries()].sort(([a], [b]) => a.localeCompare(b));
  const shape = { kvMetadata: { 'auditlake.firstSeq': String(first.seq) }, icebergDataFile: false };
  const encoded = await Promise.all(dates.map(([, events]) => encoder.encode(events, shape)));
  // A file per event day, put side by side (as an Iceberg commit's are): a batch spread over
  // many days (late events, or an ingest principal timing each event on a day of its own) was
  // one PUT after another, 1,500 days 12 s on a loopback endpoint (review).
  const files = await mapBounded(dates, OBJECT_REQUESTS_IN_FLIGHT_MAX, async ([date], index): Promise<CommittedFile> => {
    const file = encoded[index] as EncodedTierFile;
    const key = joinKey(location.prefix, `event_date=${date}/part-${encodeKeyNumber(first.seq)}-${attempt}.parquet`);
    await objects.put(key, file.bytes, 'application/vnd.apache.parquet');
    return { key, eventDate: date, tsMin: file.tsMin, tsMax: file.tsMax, rows: file.rows, bytes: file.bytes.byteLength };
  });
  context.beforeCommit?.();
  if (!context.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, 'no longer the leader; the batch was not committed (its files are unreferenced)');
  const marker: CommitMarker = {
    format: 'auditlake-parquet-commit/1',
    term: context.term,
    committedAtMs: context.nowMs,
    watermark: { ingestTs: last.ingestTs, seq: last.seq },
    firstSeq: first.seq,
    afterSeq: context.afterSeq,
    files,
    ...(context.erasureSeqs && context.erasureSeqs.length > 0 ? { erasureSeqs: [...context.erasureSeqs] } : {}),
  };
  const key = markerKey(location, context.afterSeq);
  const text = JSON.stringify(marker);
  const lost = () =>
    new AuditError(AuditErrorCode.OBJECT_EXISTS, `commit lost: ${objects.url(key)} (the commit after seq ${context.afterSeq}) was written by another committer; this batch's files are unreferenced`);
  // A stale leader, paused longer than the orphan age while planning from a watermark long
  // overtaken, finds its key free again once packing deleted the marker's loose copy; its create
  // would leave a second text under the key, which stops every later packing run and verify.
  // Packs hold only markers a checkpoint folds past, so they are looked at only when the newest
  // checkpoint lies past this key (rare: every pack listed, the one whose range holds it read).
  const packedUnderKey = async (): Promise<string | undefined> => {
    const newest = (await listCheckpointKeys(objects, location)).at(-1);
    if (newest === undefined || (checkpointKeySeq(location, newest) ?? 0) <= context.afterSeq) return undefined;
    return packedMarkerText(objects, markerPacksPrefix(location), COMMIT_MARKER_PACKS, context.afterSeq);
  };
  // Before the create: a key a pack holds is taken. (A checkpoint past a key no marker has, a
  // watermark off this location's chain, is no reason to refuse: that commit goes ahead.)
  if ((await packedUnderKey()) !== undefined) throw lost();
  if (!(await objects.putIfAbsent(key, text, 'application/json'))) throw lost();
  if (new TextDecoder().decode(await objects.get(key)) !== text) throw lost();
  // After it, for a pause between the check and the create: another text in a pack makes the
  // marker go again. An honest checkpoint (and pack) written since folds this very marker: then
  // no pack holds the key, or one holds this same text.
  const packed = await packedUnderKey();
  if (packed !== undefined && packed !== text) {
    await objects.delete(key);
    throw lost();
  }
  return { marker, bytes: files.reduce((sum, f) => sum + f.bytes, 0) };
}

/**
 * The prefix every data file of `location` is listed under: its day directories. Listings of
 * data files use it, never the whole location: the commit markers beside them grow by one per
 * sweep (about 3M in a year of 10-second sweeps, until maintenance packs the old ones), and a
 * location may hold other locations below it whose objects are not its own.
 */
export function parquetDataPrefix(location: S3Location): string {
  return joinKey(location.prefix, 'event_date=');
}

/**
 * The names this location's writers give data files, relative to the location: a day's
 * directory right under it, and a batch's, a compaction's or a row rewrite's file name (the day
 * captured). A day is `YYYY-MM-DD`, or `+YYYYYY-MM` for the days past year 9999 that versions
 * accepting such times named so (`eventDate` cut `+010000-01-01T…` at ten characters).
 */
const DAY = String.raw`\d{4}-\d{2}-\d{2}|\+\d{6}-\d{2}`;
export const PARQUET_DATA_FILE_NAME = new RegExp(String.raw`^event_date=(${DAY})\/(?:part|compacted|rewritten)-[^/]+\.parquet$`);

/**
 * The names this location's own writers give data files, by their whole shape: a batch's
 * `part-<seq, 16 digits or more>-t<term>-<attempt>` (`part-<seq>` before attempt-unique names),
 * a compaction's or a row rewrite's `compacted-`/`rewritten-t<term>-<attempt>-<n>`. What orphan
 * cleanup may delete: another writer's file in the location — Spark's
 * `part-00000-<uuid>-c000.snappy.parquet`, Hive's `part-0.parquet` — fits
 * {@link PARQUET_DATA_FILE_NAME} but not this, and was deleted as an orphan (review).
 */
export const PARQUET_OWN_DATA_FILE_NAME = new RegExp(String.raw`^event_date=(${DAY})\/(?:part-\d{16,}(?:-t-?\d+-[0-9a-z]+)?|(?:compacted|rewritten)-t-?\d+-[0-9a-z]+-\d+)\.parquet$`);

/** A day as the log names it: {@link PARQUET_DATA_FILE_NAME}'s day, alone. */
export const PARQUET_DAY = new RegExp(`^(?:${DAY})$`);

/**
 * Why a file a marker or checkpoint of `location` names is not one of its data files (undefined
 * when it is): a key outside the location or not named as its writers name data files, or a day
 * (where the entry gives one) other than its directory's. Readers fetch what the log names with
 * the node's own credentials and serve its rows as the location's: a review edited a commit
 * marker to name another cluster's file elsewhere in the bucket, and its rows came back in this
 * node's searches.
 */
export function dataFileFault(location: S3Location, file: { key?: unknown; eventDate?: unknown }): string | undefined {
  const base = joinKey(location.prefix, '');
  const key = file.key;
  if (typeof key !== 'string') return `names ${JSON.stringify(key)}, which is not a key`;
  if (!key.startsWith(base)) return `names ${key}, which is not under the location`;
  const name = PARQUET_DATA_FILE_NAME.exec(key.slice(base.length));
  if (name === null) return `names ${key}, which is not one of the location's data files (event_date=<day>/ then part-, compacted- or rewritten-….parquet)`;
  if ('eventDate' in file && name[1] !== file.eventDate) return `names ${key} as a file of ${JSON.stringify(file.eventDate)}`;
  return undefined;
}

/**
 * Throws AUDIT_TABLE_INVALID naming `where` (a marker's URL) when any of its file `lists` is not a
 * list, or names a file that is not a data file of `location` ({@link dataFileFault}): no reader
 * fetches what it names.
 */
export function refuseForeignFiles(location: S3Location, where: string, ...lists: unknown[]): void {
  for (const files of lists) {
    if (!Array.isArray(files)) throw new AuditError(AuditErrorCode.TABLE_INVALID, `${where} has no file list`);
    for (const file of files as Array<{ key?: unknown; eventDate?: unknown }>) {
      const fault = dataFileFault(location, file);
      if (fault !== undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `${where} ${fault}: a node names only its own data files there, so it was changed`);
    }
  }
}

/** The seq a marker is keyed by: the one it continues from, or its last for a marker from before `afterSeq` was written. */
export function markerKeySeq(marker: Pick<CommitMarker, 'afterSeq' | 'watermark'>): number {
  return marker.afterSeq ?? marker.watermark?.seq;
}

/** The marker of the commit that continues from watermark seq `afterSeq`; keys sort by it. */
export function markerKey(location: S3Location, afterSeq: number): string {
  return joinKey(location.prefix, `${COMMITS_DIR}/${encodeKeyNumber(afterSeq)}.json`);
}
