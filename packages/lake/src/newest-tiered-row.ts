import { decodeLongBound, readAuditParquet, readAuditParquetFooter, readWholeAuditParquet, SEQ_FIELD_ID, type ByteSource, type IcebergTableMetadata, type TieredEvent } from '@auditlake/format';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { currentManifests, isLive } from './iceberg-table-files.js';
import { s3Key, type IcebergTableRef } from './iceberg-table-ref.js';
import type { ObjectStore } from './object-store.js';
import type { CommitMarker } from './parquet-committer.js';
import { liveParquetFiles, type ParquetLog } from './parquet-compaction.js';
import { footerSeqMax } from './tiered-suffix.js';
import type { Watermark } from './watermark.js';

/**
 * The newest row a tier location holds: the one with the greatest seq, and the watermark its
 * commits record (a Parquet marker's, a checkpoint's). `row` is undefined when no live file holds
 * a row with a seq (rows tiered before the record chain, or none).
 */
export interface NewestTieredRow {
  watermark: Watermark;
  row: TieredEvent | undefined;
}

/** A data file that may hold the newest row: its key, size, and its greatest seq when its metadata says so (else its footer is read). */
interface Candidate {
  key: string;
  bytes: number;
  seqMax?: number;
}

/** The candidates' byte sources with their greatest seq (declared, else read from the footer), greatest first. */
async function boundedCandidates(objects: ObjectStore, candidates: readonly Candidate[]): Promise<Array<{ source: ByteSource; seqMax: number }>> {
  const bounded = await mapBounded(candidates, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (candidate) => {
    const source = await objects.byteSource(candidate.key, candidate.bytes);
    return { source, seqMax: candidate.seqMax ?? footerSeqMax(await readAuditParquetFooter(source)) };
  });
  return bounded.sort((a, b) => b.seqMax - a.seqMax);
}

/**
 * The row with the greatest seq among `candidates`, reading as few files as their seq bounds
 * allow: the file with the greatest bound first, whole, and any other only when its bound is
 * above the row found so far. Files without a declared bound have their footer read for it.
 */
async function newestRowIn(objects: ObjectStore, candidates: readonly Candidate[]): Promise<TieredEvent | undefined> {
  const bounded = await boundedCandidates(objects, candidates);
  let newest: TieredEvent | undefined;
  for (const file of bounded) {
    if (file.seqMax <= (newest?.seq ?? 0)) break;
    for (const row of await readWholeAuditParquet(file.source)) if (row.seq !== undefined && row.seq > (newest?.seq ?? 0)) newest = row;
  }
  return newest;
}

/**
 * The newest row of a Parquet location, from its log as read (`log`, checkpoint and markers):
 * the last commit's watermark, and its row read from the files of that commit while they are
 * live — a compaction or an erasure's rewrite replaced them with files of the same days, so
 * then those days' live files are read, and after a checkpoint with no commit since, every live
 * file's footer (its `seq` statistics) picks the file to read. Undefined for a location no batch
 * was committed to.
 */
export async function newestParquetRow(objects: ObjectStore, log: ParquetLog): Promise<NewestTieredRow | undefined> {
  let last: CommitMarker | undefined;
  for (const marker of log.markers) if (last === undefined || marker.watermark.seq > last.watermark.seq) last = marker;
  const watermark = last?.watermark ?? log.checkpoint?.checkpoint.watermark;
  if (watermark === undefined) return undefined;
  const live = liveParquetFiles(log).files;
  let files = live;
  if (last !== undefined) {
    const committed = new Set(last.files.map((file) => file.key));
    const days = new Set(last.files.map((file) => file.eventDate));
    const same = live.filter((file) => committed.has(file.key));
    const sameDays = live.filter((file) => days.has(file.eventDate));
    files = same.length === last.files.length ? same : sameDays.length > 0 ? sameDays : live;
  }
  return { watermark, row: await newestRowIn(objects, files.map((file) => ({ key: file.key, bytes: file.bytes }))) };
}

/**
 * The newest row of an Iceberg table as its current snapshot holds it: the live data file with
 * the greatest `seq` upper bound in its manifest entry is read (one file; a file declaring no
 * such bound has its footer read instead). `watermark` is that row's (seq, ingest time).
 * Undefined for a table without a snapshot or without a row that has a seq.
 */
export async function newestIcebergRow(objects: ObjectStore, table: IcebergTableRef, metadata: IcebergTableMetadata): Promise<NewestTieredRow | undefined> {
  const row = await newestRowIn(objects, await icebergCandidates(objects, table, metadata));
  return row === undefined ? undefined : { watermark: { seq: row.seq as number, ingestTs: row.ingestTs }, row };
}

/** The live data files of the table's current snapshot, with the greatest seq their manifest entries declare. */
async function icebergCandidates(objects: ObjectStore, table: IcebergTableRef, metadata: IcebergTableMetadata): Promise<Candidate[]> {
  const candidates: Candidate[] = [];
  for (const manifest of await currentManifests(objects, table, metadata)) {
    for (const entry of manifest.entries) {
      if (!isLive(entry)) continue;
      const file = entry.data_file;
      const bound = file.upper_bounds?.find((b) => b.key === SEQ_FIELD_ID)?.value;
      candidates.push({ key: s3Key(table, file.file_path), bytes: Number(file.file_size_in_bytes), ...(bound === undefined ? {} : { seqMax: Number(decodeLongBound(bound)) }) });
    }
  }
  return candidates;
}

/**
 * Footers seqsIn reads at most to learn which files hold seqs past the range's start (files
 * whose metadata declares no seq bound: a Parquet location's): past it, it answers undefined
 * rather than fetch a footer of every live file of a location far behind (maintenance off for
 * long, a range reaching into its checkpoint).
 */
export const SEQS_AFTER_FOOTERS_MAX = 10_000;

/**
 * The seqs after `afterSeq`, through `throughSeq`, that `candidates` hold, ascending; undefined
 * once more than `seqsMax` are found (reading stops there), or when more than
 * SEQS_AFTER_FOOTERS_MAX footers would be read first. Only files whose greatest seq is past
 * `afterSeq` are read, one at a time, and only their seqs are kept.
 */
async function seqsIn(objects: ObjectStore, candidates: readonly Candidate[], afterSeq: number, throughSeq: number, seqsMax: number, footersMax = SEQS_AFTER_FOOTERS_MAX): Promise<number[] | undefined> {
  if (candidates.filter((candidate) => candidate.seqMax === undefined).length > footersMax) return undefined;
  const seqs = new Set<number>();
  for (const file of await boundedCandidates(objects, candidates)) {
    if (file.seqMax <= afterSeq) break;
    for (const { seq } of await readAuditParquet(file.source, { columns: ['seq'] })) if (seq !== undefined && seq > afterSeq && seq <= throughSeq) seqs.add(seq);
    if (seqs.size > seqsMax) return undefined;
  }
  return [...seqs].sort((a, b) => a - b);
}

/**
 * The seqs after `afterSeq` (through `throughSeq`) a Parquet location's live files hold, from its
 * log as read: what a sweep that takes its watermark from the location (its leader died before
 * recording a commit; an adoption) records as committed there (tier-segments.ts). The files the
 * later markers committed are read while all are live; once a compaction or an erasure replaced
 * some, the live files of their days (both keep a file's day); every live file when the range
 * reaches into the checkpoint. Only the `seq` column is fetched. Undefined once more than
 * `seqsMax` are found, or more than SEQS_AFTER_FOOTERS_MAX footers would be read.
 */
export async function parquetSeqsAfter(objects: ObjectStore, log: ParquetLog, afterSeq: number, throughSeq: number, seqsMax = Infinity, footersMax = SEQS_AFTER_FOOTERS_MAX): Promise<number[] | undefined> {
  const live = liveParquetFiles(log).files;
  const committed = log.markers.filter((marker) => marker.watermark.seq > afterSeq).flatMap((marker) => marker.files);
  const liveKeys = new Set(live.map((file) => file.key));
  const days = new Set(committed.map((file) => file.eventDate));
  const reachesCheckpoint = (log.checkpoint?.checkpoint.watermark.seq ?? 0) > afterSeq;
  const files = reachesCheckpoint ? live : committed.every((file) => liveKeys.has(file.key)) ? committed : live.filter((file) => days.has(file.eventDate));
  return seqsIn(objects, files.map((file) => ({ key: file.key, bytes: file.bytes })), afterSeq, throughSeq, seqsMax, footersMax);
}

/** As parquetSeqsAfter, for an Iceberg table's current snapshot: the live files whose declared seq bound is past `afterSeq`. */
export async function icebergSeqsAfter(objects: ObjectStore, table: IcebergTableRef, metadata: IcebergTableMetadata, afterSeq: number, throughSeq: number, seqsMax = Infinity): Promise<number[] | undefined> {
  return seqsIn(objects, await icebergCandidates(objects, table, metadata), afterSeq, throughSeq, seqsMax);
}
