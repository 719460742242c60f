import { checkDeclaredMetrics, newestAncestorCarrying, type DataFile } from '@auditlake/format';
import type { BatchSpan, CheckedBatch, CheckedRecord, FoundCheckpoint, RowsWithoutSeqSeen, ShownKey } from '@auditlake/integrity';
import { ArrivingBatchMerge, mergeSpannedBatches, parseSignedCheckpoint } from '@auditlake/integrity';
import {
  CHECKPOINT_SUMMARY_KEY,
  checkParquetCheckpoint,
  eventDate,
  IcebergTierSource,
  icebergTableAt,
  liveParquetFiles,
  loadIcebergTable,
  ParquetTierSource,
  parseS3Location,
  readIntegrityObjects,
  readParquetLog,
  S3Connections,
  tableWatermark,
  type TierFile,
  type TierSource,
} from '@auditlake/lake';
import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';
import type { VerifyChecks } from './verify-checks.js';
import type { TierLocationOption } from './verify-options.js';

/** What a tier says of itself before its records are checked: the proof kept beside them, and where it ends. */
export interface TierProofStart {
  files: number;
  checkpoints: FoundCheckpoint[];
  keys: ShownKey[];
  /** Where the tier's own commits say it ends (the newest commit's watermark). */
  head: { seq: number; where: string } | undefined;
}

/**
 * What a tier gives the verifier once each of its files was checked: the proof kept beside its
 * records, what its rows without a seq showed, and its records in seq order. No file's records
 * are kept: a tier of days of events does not fit in memory (about 250 bytes a record).
 */
export interface TierProof extends TierProofStart {
  /** The least seq any of its files holds (undefined: no file holds a chained record). */
  firstSeq: number | undefined;
  legacyRows: number;
  /** What the files showed of those rows and of the tier's first chained row (ChainVerifier.addRowsWithoutSeq). */
  rowsWithoutSeqSeen: RowsWithoutSeqSeen;
  /** Every record was fed through what `started` returned, in seq order: no need to read {@link records}. */
  folded: boolean;
  /**
   * The tier's records in seq order (copies of one seq in the order the tier lists their
   * files), a chunk at a time: each file that holds records fetched and checked again, once the
   * merge reaches its least seq (a few ahead), and dropped once read ({@link mergeSpannedBatches}).
   * A file that no longer holds what it held when first checked fails it.
   */
  records(): AsyncGenerator<CheckedRecord[]>;
  /** Closes the tier's connection (after {@link records}, if read). */
  close(): Promise<void>;
}

/** Told of the tier's records in seq order, while its files are still being checked. */
export type TierRecordFeed = (record: CheckedRecord) => void;

const CONNECTION_ID = 'verify';

/** A committed data file to check; for Iceberg, with what its manifest entry declares of its columns. */
type ListedFile = TierFile & { declared?: DataFile };

/**
 * Reads a tier from the bucket alone: the `_integrity/` objects beside it and, for Iceberg, the
 * newest checkpoint a snapshot summary in the current snapshot's ancestry carries, then every committed data file (through
 * the Parquet commit markers — every one, and the newest checkpoint of the Parquet log checked
 * against them — or the Iceberg table's current snapshot), checked by `checks` as it arrives. `started`, when given, is told what the tier says of itself once that is read and
 * before any file is checked, and may return a feed for the tier's records: they are fed in seq
 * order while later files are still being checked ({@link ArrivingBatchMerge}) when the
 * listing allows it ({@link TierProof.folded}); otherwise the caller reads them from
 * {@link TierProof.records}. The caller closes what this returns.
 */
export async function readTierProof(tier: TierLocationOption, checks: VerifyChecks, started?: (start: TierProofStart) => TierRecordFeed | undefined): Promise<TierProof> {
  const location = parseS3Location(tier.location);
  if (!location) throw new AuditError(AuditErrorCode.BAD_REQUEST, `not an s3://bucket/prefix location: ${tier.location}`);
  const connections = new S3Connections(
    new Map([
      [
        CONNECTION_ID,
        { id: CONNECTION_ID, endpoint: tier.endpoint, region: tier.region, accessKeyId: tier.accessKeyId, secretAccessKey: tier.secretAccessKey, forcePathStyle: tier.endpoint !== '' },
      ],
    ]),
  );
  let source: (TierSource & { close(): Promise<void> }) | undefined;
  const close = async () => {
    await source?.close();
    connections.close();
  };
  try {
    const objects = connections.bucket(CONNECTION_ID, location.bucket);
    const checkpoints: FoundCheckpoint[] = [];
    let head: TierProof['head'];
    let files: ListedFile[];
    if (tier.mode === 'parquet') {
      // Every marker, not the newest checkpoint readers start from: the files checked are those
      // the markers declare, and the checkpoint is checked against them (a forged one that hid a
      // file from searches fails here, naming it).
      const log = await readParquetLog(objects, location, undefined, { fromCheckpoint: false });
      const newest = log.markers.at(-1);
      if (newest !== undefined) head = { seq: newest.watermark.seq, where: `the newest commit marker of ${tier.location}` };
      await checkParquetCheckpoint(objects, location, log);
      source = new ParquetTierSource(connections, { mode: 'parquet', path: tier.location, connectionId: CONNECTION_ID });
      files = liveParquetFiles(log).files;
    } else {
      const table = { identifier: tier.location, location: tier.location, connectionId: CONNECTION_ID };
      const loaded = await loadIcebergTable(objects, icebergTableAt(table));
      if (!loaded) throw new AuditError(AuditErrorCode.TABLE_INVALID, `no Iceberg table at ${tier.location} (no metadata/version-hint.text or v1.metadata.json)`);
      // From the newest snapshot of the current one's ancestry that carries it, as the watermark
      // is read: another engine's commit on top (a compaction, a rewrite of manifests) carries
      // none of our keys, and the checkpoint beneath it must still be checked.
      const carrier = newestAncestorCarrying(loaded.metadata, CHECKPOINT_SUMMARY_KEY);
      const summary = carrier?.summary[CHECKPOINT_SUMMARY_KEY];
      if (carrier !== undefined && summary !== undefined) checkpoints.push(found(summary, `the summary of snapshot ${carrier['snapshot-id']} of ${tier.location}`));
      const watermark = tableWatermark(loaded);
      if (watermark !== undefined) head = { seq: watermark.seq, where: `the current snapshot's watermark of ${tier.location}` };
      const iceberg = new IcebergTierSource(connections, table);
      source = iceberg;
      // With each file's declarations, and every manifest's partition summary checked.
      files = await iceberg.listDeclaredFiles();
    }
    // The proof is read right after the listing, not after every file is checked: the fold
    // needs its checkpoints from the start (and a tier being written meanwhile has less time
    // to gain a checkpoint past the files listed).
    const proof = await readIntegrityObjects(objects, location.prefix);
    for (const object of proof.checkpoints) checkpoints.push(found(object.text, object.where));
    const start: TierProofStart = { files: files.length, checkpoints, keys: proof.keys, head };
    const feed = started?.(start);
    const lanes = Math.max(2, 2 * checks.threads);
    // As many may wait unfed as may arrive ahead of the listing's checked prefix, and a few
    // more: files the sweep wrote across a day boundary start below the last ones before them.
    const early = feed === undefined ? undefined : new ArrivingBatchMerge(feed, 2 * lanes + FOLD_HELD_SLACK);
    const checked = await checkFiles(source, files, checks, lanes, early);
    early?.finish();
    const opened = source;
    return {
      ...start,
      ...checked,
      firstSeq: checked.spans.reduce<number | undefined>((least, span) => (least === undefined || span.first < least ? span.first : least), undefined),
      folded: early?.inOrder === true,
      records: () => mergeSpannedBatches(checked.spans, (span) => checkAgain(opened, checks, span as FileSpan), lanes),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Arrived files that may wait unfed at once besides those checked ahead of the listing's prefix. */
const FOLD_HELD_SLACK = 8;

/** What the first pass keeps of a file that holds records: where to read it again, and what it held then. */
interface FileSpan extends BatchSpan {
  file: ListedFile;
  shape: string;
}

/** What a check of a file found that a second check of it must find again (its records are read from the second). */
function shapeOf(batch: CheckedBatch): string {
  return JSON.stringify([batch.count, batch.skipped, batch.seqs[0], batch.seqs[batch.count - 1], batch.withoutSeq, batch.firstRow]);
}

async function checkAgain(source: TierSource, checks: VerifyChecks, span: FileSpan): Promise<CheckedBatch> {
  const batch = await checkFile(source, span.file, checks);
  if (shapeOf(batch) !== span.shape) {
    throw new AuditError(
      AuditErrorCode.INTEGRITY_MISMATCH,
      `tier file ${span.file.key} changed while it was being verified: read again in seq order, it no longer holds the rows it held when first checked`,
    );
  }
  return batch;
}

/**
 * Fetches every file whole and has it checked, a few at a time: while the checks decode and
 * hash some files, the next ones are being fetched, and at most that many are held at once.
 * Each batch goes to `early` (the fold while files arrive) and is then dropped: only each file's
 * span is kept. With `early`, no file is checked more than `2 * lanes` past the first one not
 * yet checked, so the batches waiting there for a slow file stay few. A failure stops every
 * lane after its current file, and is thrown only once no check is running: the caller then
 * closes the worker threads, and terminating one in the middle of a job (inflating a page)
 * crashed the whole process in Node's zlib ("close before init").
 */
async function checkFiles(
  source: TierSource,
  files: readonly ListedFile[],
  checks: VerifyChecks,
  lanes: number,
  early: ArrivingBatchMerge | undefined,
): Promise<{ spans: FileSpan[]; legacyRows: number; rowsWithoutSeqSeen: RowsWithoutSeqSeen }> {
  const spans: FileSpan[] = [];
  /** Per file (in listing order), what it showed of its rows without a seq: a pass in that order is what picks among equals. */
  const shown: RowsShown[] = [];
  let legacyRows = 0;
  const arrived = new Uint8Array(files.length);
  /** Files 0..prefix-1 have all been checked. */
  let prefix = 0;
  let advanced: { promise: Promise<void>; resolve: () => void } | undefined;
  const wake = () => {
    advanced?.resolve();
    advanced = undefined;
  };
  const waitForPrefix = () => {
    if (advanced === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      advanced = { promise, resolve };
    }
    return advanced.promise;
  };
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && next < files.length) {
      const at = next++;
      while (!failed && early !== undefined && at >= prefix + 2 * lanes) await waitForPrefix();
      if (failed) return;
      try {
        const file = files[at] as ListedFile;
        const batch = await checkFile(source, file, checks);
        if (failed) return;
        early?.arrive(at, batch);
        legacyRows += batch.skipped;
        shown[at] = { withoutSeq: batch.withoutSeq, firstRow: batch.firstRow };
        if (batch.count > 0) spans.push({ order: at, first: batch.seqs[0] as number, file, shape: shapeOf(batch) });
        arrived[at] = 1;
        const before = prefix;
        while (prefix < files.length && arrived[prefix] === 1) prefix++;
        if (prefix !== before) wake();
      } catch (err) {
        failed = true;
        wake();
        throw err;
      }
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: Math.min(files.length, lanes) }, lane));
  const failure = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
  return { spans, legacyRows, rowsWithoutSeqSeen: rowsWithoutSeqSeen(shown) };
}

/**
 * A file the tier's listing named that was gone when verify fetched it: an erasure deletes the
 * files it rewrote at once, and maintenance those it replaced after their grace period, so a
 * tier read while it is written may lose one between its listing and the fetch (more so across
 * verify's two passes). The tier changed; nothing is known to be wrong with it. verifyHistory
 * reads it again from a new listing (TIER_CHANGED_ATTEMPTS).
 */
export class TierFileGone extends AuditError {
  constructor(readonly key: string, cause: unknown) {
    super(AuditErrorCode.OBJECT_NOT_FOUND, `tier file ${key} was removed while verify read the tier (an erasure or a maintenance run replaced it): the tier changed under verify, not known to be damaged; run verify again`, { cause });
  }
}

/** Fetches a file whole and has it checked, and its rows checked against what its commit declares. */
async function checkFile(source: TierSource, file: ListedFile, checks: VerifyChecks): Promise<CheckedBatch> {
  let whole: ArrayBuffer;
  try {
    const bytes = await source.open(file);
    whole = await bytes.slice(0, bytes.byteLength);
  } catch (err) {
    throw isAuditError(err, AuditErrorCode.OBJECT_NOT_FOUND) ? new TierFileGone(file.key, err) : err;
  }
  const batch = await checks.check({ parquet: whole }).catch((err: unknown) => {
    throw namingFile(file, err);
  });
  checkDeclared(file, batch);
  if (file.declared !== undefined) {
    if (batch.columnSummaries === undefined) throw new TypeError(`the check of tier file ${file.key} summed up none of its columns`);
    checkDeclaredMetrics(`tier file ${file.key}`, file.declared, batch.columnSummaries);
  }
  return batch;
}

/**
 * A file's check failed on what the file itself holds (a value, a footer declaration): the
 * error with the file named first, so the report says where to look.
 */
function namingFile(file: TierFile, err: unknown): unknown {
  if (!isAuditError(err) || (err.code !== AuditErrorCode.INTEGRITY_MISMATCH && err.code !== AuditErrorCode.TABLE_INVALID)) return err;
  return new AuditError(err.code, `tier file ${file.key}: ${err.message}`, { cause: err });
}

/** The largest epoch-ms magnitude a Date holds. */
const DATE_MS_MAX = 8.64e15;

function isoTime(ms: number): string {
  return Math.abs(ms) <= DATE_MS_MAX ? new Date(ms).toISOString() : String(ms);
}

/**
 * Throws unless a data file's rows agree with what its commit (the Iceberg manifest entry, the
 * Parquet commit marker) declares of them: their count, their event-time bounds and their day.
 * The chain proves the rows; readers find them by those declarations, which it does not
 * cover: a partition value or a bound changed in a manifest would hide rows from every search
 * that skips files by them (ours, Trino's, Spark's) while every record still verified. An
 * Iceberg file's other declarations (every column's bounds and counts) are checked after this,
 * by checkDeclaredMetrics.
 */
function checkDeclared(file: TierFile, batch: CheckedBatch): void {
  const rows = batch.count + batch.skipped;
  if (rows !== file.rows) {
    throw new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `tier file ${file.key} holds ${rows} rows, but its commit declares ${file.rows}: the table's metadata was altered or the file replaced`);
  }
  const time = batch.eventTime;
  if (time === undefined) return;
  const declared = `${file.eventDate === '' ? '' : `day ${file.eventDate}, `}event times ${isoTime(file.tsMin)}..${isoTime(file.tsMax)}`;
  const outside = time.min < file.tsMin ? time.min : time.max > file.tsMax ? time.max : undefined;
  // A time past what a Date holds (a file without bounds may hold anything) is on no day.
  const offDay = outside !== undefined || file.eventDate === '' ? undefined : [time.min, time.max].find((ms) => !(Math.abs(ms) <= DATE_MS_MAX) || eventDate(ms) !== file.eventDate);
  const stray = outside ?? offDay;
  if (stray !== undefined) {
    throw new AuditError(
      AuditErrorCode.INTEGRITY_MISMATCH,
      `tier file ${file.key} holds a row with event time ${isoTime(stray)}, outside what its commit declares (${declared}): a search that skips files by those bounds would miss it; the table's metadata was altered`,
    );
  }
}

function found(text: string, where: string): FoundCheckpoint {
  try {
    return { checkpoint: parseSignedCheckpoint(text), where };
  } catch (err) {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `the checkpoint in ${where} is damaged: ${(err as Error).message}`);
  }
}

/** What a file's check showed of its rows without a seq and of its least-seq row. */
interface RowsShown {
  withoutSeq: CheckedBatch['withoutSeq'];
  firstRow: CheckedBatch['firstRow'];
}

/** The latest-ingested row without a seq and the least-seq row over every file (in listing order). */
function rowsWithoutSeqSeen(shown: readonly RowsShown[]): RowsWithoutSeqSeen {
  const seen: RowsWithoutSeqSeen = {};
  for (const { withoutSeq, firstRow } of shown) {
    if (withoutSeq !== undefined && !(withoutSeq.ingestTsMax <= (seen.withoutSeq?.ingestTsMax ?? -Infinity))) seen.withoutSeq = withoutSeq;
    if (firstRow !== undefined && firstRow.seq < (seen.firstRow?.seq ?? Infinity)) seen.firstRow = firstRow;
  }
  return seen;
}
