import { encodeAuditParquet } from '@auditlake/format';
import { AuditError, AuditErrorCode, type StoredEvent } from '@auditlake/model';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { joinKey, type S3Location } from './s3-location.js';
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
  files: CommittedFile[];
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

/**
 * Writes one batch as hive-style day partitions and then its commit marker. File names come
 * from the batch's first seq, so a leader that crashed before the marker and a successor that
 * retries from the same watermark write the same names: the retry overwrites, never adds.
 * `mayCommit()` is asked right before the marker (the leader's lease and term).
 */
export async function commitParquetBatch(
  objects: ObjectStore,
  location: S3Location,
  batch: readonly StoredEvent[],
  context: { term: number; nowMs: number; mayCommit: () => boolean; beforeCommit?: () => void },
): Promise<ParquetBatchResult> {
  const first = batch[0];
  const last = batch[batch.length - 1];
  if (!first || !last) throw new TypeError('commitParquetBatch needs at least one event');
  const byDate = new Map<string, StoredEvent[]>();
  for (const event of batch) {
    const date = eventDate(event.timestamp);
    const list = byDate.get(date);
    if (list) list.push(event);
    else byDate.set(date, [event]);
  }
  const files: CommittedFile[] = [];
  for (const [date, events] of [...byDate.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const bytes = encodeAuditParquet(events, { kvMetadata: { 'auditlake.firstSeq': String(first.seq) } });
    const key = joinKey(location.prefix, `event_date=${date}/part-${encodeKeyNumber(first.seq)}.parquet`);
    await objects.put(key, bytes, 'application/vnd.apache.parquet');
    let tsMin = Number.MAX_SAFE_INTEGER;
    let tsMax = 0;
    for (const e of events) {
      tsMin = Math.min(tsMin, e.timestamp);
      tsMax = Math.max(tsMax, e.timestamp);
    }
    files.push({ key, eventDate: date, rows: events.length, bytes: bytes.byteLength, tsMin, tsMax });
  }
  context.beforeCommit?.();
  if (!context.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, 'no longer the leader; the batch was not committed (a successor will rewrite the same files)');
  const marker: CommitMarker = {
    format: 'auditlake-parquet-commit/1',
    term: context.term,
    committedAtMs: context.nowMs,
    watermark: { ingestTs: last.ingestTs, seq: last.seq },
    firstSeq: first.seq,
    files,
  };
  await objects.put(markerKey(location, last.seq), JSON.stringify(marker), 'application/json');
  return { marker, bytes: files.reduce((sum, f) => sum + f.bytes, 0) };
}

/** Marker keys sort by the seq they commit up to, so the newest is the last listed. */
export function markerKey(location: S3Location, lastSeq: number): string {
  return joinKey(location.prefix, `${COMMITS_DIR}/${encodeKeyNumber(lastSeq)}.json`);
}

/** Every commit marker at `location` after the one for `afterSeq`, oldest first. */
export async function readMarkers(objects: ObjectStore, location: S3Location, afterSeq = 0): Promise<CommitMarker[]> {
  const prefix = joinKey(location.prefix, `${COMMITS_DIR}/`);
  const keys = await objects.list(prefix, afterSeq > 0 ? { startAfter: markerKey(location, afterSeq) } : {});
  const markers: CommitMarker[] = [];
  for (const key of keys) {
    markers.push(JSON.parse(new TextDecoder().decode(await objects.get(key))) as CommitMarker);
  }
  return markers;
}
