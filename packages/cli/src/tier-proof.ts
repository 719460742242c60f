import { checkAuditSchema, checkDeclaredMetrics, newestAncestorCarrying, type DataFile } from '@auditlake/format';
import type { BatchSpan, CheckedBatch, CheckedRecord, FoundCheckpoint, RowsWithoutSeqSeen, ShownKey } from '@auditlake/integrity';
import { mergeSpannedBatches, parseSignedCheckpoint } from '@auditlake/integrity';
import {
  CHECKPOINT_SUMMARY_KEY,
  checkParquetCheckpoint,
  eventDate,
  IcebergTierSource,
  icebergTableAt,
  liveParquetFiles,
  loadIcebergTable,
  mapBounded,
  OBJECT_REQUESTS_IN_FLIGHT_MAX,
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
import { checkHintedVersion } from './hinted-version.js';
import { icebergSeqBounds, parquetFooterSeqBounds, parquetMarkerSeqBounds, type SeqBounds } from './tier-file-seq-bounds.js';
import type { VerifyChecks } from './verify-checks.js';
import type { TierLocationOption } from './verify-options.js';

/** What a tier says of itself before its records are checked: the proof kept beside them, and where it ends. */
export interface TierProofStart {
  files: number;
  checkpoints: FoundCheckpoint[];
  keys: ShownKey[];
  /** Where the tier's own commits say it ends (the newest commit's watermark). */
  head: { seq: number; where: string } | undefined;
  /** What a reader of the tier should know that is no break (an Iceberg version hint behind the newest version). */
  notes: string[];
}

/**
 * A tier ready to give the verifier its records in seq order, and then what its rows without a
 * seq showed. No file's records are kept once read: a tier of days of events does not fit in
 * memory (about 250 bytes a record).
 */
export interface TierProof extends TierProofStart {
  /**
   * The tier's records in seq order (copies of one seq in the order the tier lists their
   * files), a chunk at a time: each file fetched and checked once the merge reaches the least
   * seq its commit declares (a few ahead), and dropped once read ({@link mergeSpannedBatches}).
   * A file whose commit declares no seqs was checked when the proof was read, and is fetched
   * again here only if it held records (so is every file when verify ignores declared bounds).
   * Throws {@link TierSeqBoundsUntrue} when a file holds a seq outside what its commit declares
   * and no check of the file's own declarations reported it.
   */
  records(): AsyncGenerator<CheckedRecord[]>;
  /** What the files showed of their rows without a seq (ChainVerifier.addRowsWithoutSeq); only once {@link records} was read to its end. */
  rowsWithoutSeq(): { legacyRows: number; seen: RowsWithoutSeqSeen };
  /** Closes the tier's connection (after {@link records}, if read). */
  close(): Promise<void>;
}

/**
 * Whether verify orders a tier's files by the seqs their commits declare (one pass), or ignores
 * those (every file checked, then those holding records again in the order of the least seq
 * that check found: two passes), as it does once a declaration turned out untrue.
 */
export type TierBoundsUse = 'declared' | 'ignored';

/**
 * Most records a tier read in the order its commits declare holds not yet verified (about 250
 * bytes each, so ~250 MB): 200 of the default 5,000-event sweep batches, whose files are what
 * healthy declared bounds make overlap; a commit declaring its files from far below their seqs
 * reaches it, and the tier is then read in two passes (MergeHeldTooMuch).
 */
export const DECLARED_ORDER_HELD_RECORDS_MAX = 1_000_000;

const CONNECTION_ID = 'verify';

/** A committed data file to check; for Iceberg, with what its manifest entry declares of its columns. */
type ListedFile = TierFile & { declared?: DataFile };

/**
 * Reads a tier from the bucket alone: the `_integrity/` objects beside it and, for Iceberg, the
 * newest checkpoint a snapshot summary in the current snapshot's ancestry carries, and the
 * listing of every committed data file (through the Parquet commit markers — every one, and the
 * newest checkpoint of the Parquet log checked against them — or the Iceberg table's current
 * snapshot) with the seqs each one's commit declares: its manifest entry's `seq` bounds; for a
 * Parquet file, its commit marker's batch, or — for a file a compaction marker added — its
 * footer's `seq` statistics (one small ranged GET). Files with none declared are checked now, by
 * `checks`; the others when {@link TierProof.records} reaches them. With `bounds` 'ignored', no
 * declaration is taken. The caller closes what this returns.
 */
export async function readTierProof(tier: TierLocationOption, checks: VerifyChecks, bounds: TierBoundsUse = 'declared', declaredOrderHeldMax = DECLARED_ORDER_HELD_RECORDS_MAX): Promise<TierProof> {
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
    const notes: string[] = [];
    /** The seqs each file's commit declares, where it declares them (by place in the listing). */
    let declared: Array<SeqBounds | undefined>;
    /** Files whose seqs only their footers declare (Parquet files a compaction marker added). */
    let byFooter: boolean[];
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
      const markers = log.byKey === undefined ? log.markers.map((marker) => ({ marker })) : [...log.byKey.markers].map(([key, marker]) => ({ key: objects.url(key), marker }));
      const byMarker = parquetMarkerSeqBounds(markers);
      declared = files.map((file) => byMarker.get(file.key));
      byFooter = declared.map((bounds) => bounds === undefined);
    } else {
      const table = { identifier: tier.location, location: tier.location, connectionId: CONNECTION_ID };
      const loaded = await loadIcebergTable(objects, icebergTableAt(table));
      if (!loaded) throw new AuditError(AuditErrorCode.TABLE_INVALID, `no Iceberg table at ${tier.location} (no metadata/version-hint.text or v1.metadata.json)`);
      // The files' columns are read by name here; every other reader labels them by the table's
      // schema. Two names swapped there verified while every engine showed them swapped (review).
      try {
        checkAuditSchema(loaded.metadata);
      } catch (err) {
        throw isAuditError(err) ? new AuditError(err.code, `the current schema of ${tier.location}: ${err.message}`) : err;
      }
      const hinted = await checkHintedVersion(objects, icebergTableAt(table), loaded, tier.location);
      if (hinted !== undefined) notes.push(hinted);
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
      declared = files.map((file) => (file.declared === undefined ? undefined : icebergSeqBounds(file.declared)));
      byFooter = files.map(() => false);
    }
    // The proof is read right after the listing, before the files: the verifier needs its
    // checkpoints from the start (and a tier being written meanwhile has less time to gain a
    // checkpoint past the files listed).
    const proof = await readIntegrityObjects(objects, location.prefix);
    for (const object of proof.checkpoints) checkpoints.push(found(object.text, object.where));
    const opened = source;
    if (bounds === 'ignored') declared = files.map(() => undefined);
    else if (byFooter.includes(true)) declared = await withFooterBounds(opened, files, declared, byFooter);
    const lanes = Math.max(2, 2 * checks.threads);
    const tally = new RowsWithoutSeqTally(files.length);
    // A file no commit bounds is checked now, whole; one that holds records is checked again in
    // seq order, from the least seq this check found in it.
    const unbounded = files.flatMap((file, order) => (declared[order] === undefined ? [{ file, order }] : []));
    const checkedFirst = await checkFiles(opened, unbounded, checks, lanes, tally);
    const spans: FileSpan[] = [...checkedFirst];
    files.forEach((file, order) => {
      const bounds = declared[order];
      if (bounds !== undefined) spans.push({ order, first: bounds.lower, file, declared: bounds });
    });
    let read = false;
    return {
      files: files.length,
      checkpoints,
      keys: proof.keys,
      head,
      notes,
      async *records() {
        // Declared bounds are claims: true but loose ones (every file declared from seq 0) would
        // have the merge hold the whole tier, so past the bound it stops and verifyHistory reads
        // the tier again in the order its files show (two passes). Files ordered by what a first
        // check found hold only what truly overlaps.
        const heldMax = bounds === 'declared' ? declaredOrderHeldMax : Infinity;
        yield* mergeSpannedBatches(spans, (span) => checkInOrder(opened, checks, span as FileSpan, tally), lanes, heldMax);
        read = true;
      },
      rowsWithoutSeq() {
        if (!read) throw new TypeError("a tier's rows without a seq are known once its records were read to the end");
        return tally.result();
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * `declared` with the seqs of the files `byFooter` marks taken from their footers' `seq`
 * statistics, a few requests at a time. The check of each file tests its footer's statistics
 * against its rows (checkRowGroupDeclarations), so a footer that lies is reported, naming the file.
 */
async function withFooterBounds(source: TierSource, files: readonly ListedFile[], declared: ReadonlyArray<SeqBounds | undefined>, byFooter: readonly boolean[]): Promise<Array<SeqBounds | undefined>> {
  return mapBounded(files, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (file, order) => {
    if (byFooter[order] !== true) return declared[order];
    try {
      return await parquetFooterSeqBounds(await source.open(file));
    } catch (err) {
      if (isAuditError(err, AuditErrorCode.OBJECT_NOT_FOUND)) throw new TierFileGone(file.key, err);
      throw namingFile(file, err);
    }
  });
}

/**
 * Where a file's records enter the merge: the least seq its commit declares (`declared`), or the
 * least one a first check found in it (`shape`: what that check found, which the second must
 * find again).
 */
interface FileSpan extends BatchSpan {
  file: ListedFile;
  declared?: SeqBounds;
  shape?: string;
}

/** What a check of a file found that a second check of it must find again (its records are read from the second). */
function shapeOf(batch: CheckedBatch): string {
  return JSON.stringify([batch.count, batch.skipped, batch.seqs[0], batch.seqs[batch.count - 1], batch.withoutSeq, batch.firstRow]);
}

/**
 * A file's check when the merge reaches it: the only one of a file whose commit declares its
 * seqs — which it must hold within, or the order the merge gave records in so far may be wrong —
 * or the second of a file checked before, which must find what the first found.
 */
async function checkInOrder(source: TierSource, checks: VerifyChecks, span: FileSpan, tally: RowsWithoutSeqTally): Promise<CheckedBatch> {
  const batch = await checkFile(source, span.file, checks);
  if (span.shape !== undefined) {
    if (shapeOf(batch) !== span.shape) {
      throw new AuditError(
        AuditErrorCode.INTEGRITY_MISMATCH,
        `tier file ${span.file.key} changed while it was being verified: read again in seq order, it no longer holds the rows it held when first checked`,
      );
    }
    return batch;
  }
  tally.note(span.order, batch);
  const declared = span.declared;
  if (declared !== undefined && batch.count > 0) {
    const least = batch.seqs[0] as number;
    const greatest = batch.seqs[batch.count - 1] as number;
    if (least < declared.lower || greatest > declared.upper) throw new TierSeqBoundsUntrue(span.file.key, declared, least < declared.lower ? least : greatest);
  }
  return batch;
}

/**
 * A file holds a seq outside the seqs its commit declares, and no check of the file's own
 * declarations reported it first (an Iceberg manifest entry's bounds and a footer's statistics
 * are such declarations, and a lie in them is reported naming the file; a Parquet commit
 * marker's batch is not one readers rely on). The merge's order rested on the bound, so what it
 * gave is void: verifyHistory reads the tier again ignoring declared bounds (two passes).
 */
export class TierSeqBoundsUntrue extends Error {
  constructor(readonly key: string, readonly declared: SeqBounds, readonly seq: number) {
    super(`tier file ${key} holds seq ${seq}, outside the seqs ${declared.lower}..${declared.upper} ${declared.declaredBy} declares for it`);
  }
}

/**
 * Fetches each file whole and has it checked, a few at a time: while the checks decode and
 * hash some files, the next ones are being fetched, and at most that many are held at once.
 * Each batch is dropped once checked: of a file that holds records only its span is kept, to
 * read it again in seq order. A failure stops every lane after its current file, and is thrown
 * only once no check is running: the caller then closes the worker threads, and terminating one
 * in the middle of a job (inflating a page) crashed the whole process in Node's zlib ("close
 * before init").
 */
async function checkFiles(source: TierSource, files: ReadonlyArray<{ file: ListedFile; order: number }>, checks: VerifyChecks, lanes: number, tally: RowsWithoutSeqTally): Promise<FileSpan[]> {
  const spans: FileSpan[] = [];
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && next < files.length) {
      const { file, order } = files[next++] as { file: ListedFile; order: number };
      try {
        const batch = await checkFile(source, file, checks);
        if (failed) return;
        tally.note(order, batch);
        if (batch.count > 0) spans.push({ order, first: batch.seqs[0] as number, file, shape: shapeOf(batch) });
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: Math.min(files.length, lanes) }, lane));
  const failure = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
  return spans;
}

/**
 * A file the tier's listing named that was gone when verify fetched it: an erasure deletes the
 * files it rewrote at once, and maintenance those it replaced after their grace period, so a
 * tier read while it is written may lose one between its listing and the fetch (more so a
 * file checked twice). The tier changed; nothing is known to be wrong with it. verifyHistory
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

/**
 * What each file's check showed of its rows without a seq and of its least-seq row, kept by the
 * file's place in the listing (files are checked in another order): a pass in listing order is
 * what picks among equals.
 */
class RowsWithoutSeqTally {
  readonly #shown: Array<RowsShown | undefined>;
  #legacyRows = 0;

  constructor(files: number) {
    this.#shown = new Array<RowsShown | undefined>(files);
  }

  /** The check of the file at `order` in the listing (once per file). */
  note(order: number, batch: CheckedBatch): void {
    this.#legacyRows += batch.skipped;
    this.#shown[order] = { withoutSeq: batch.withoutSeq, firstRow: batch.firstRow };
  }

  /** How many rows had no seq; the latest-ingested of them and the least-seq row over every file. */
  result(): { legacyRows: number; seen: RowsWithoutSeqSeen } {
    const seen: RowsWithoutSeqSeen = {};
    for (const shown of this.#shown) {
      if (shown === undefined) continue;
      const { withoutSeq, firstRow } = shown;
      if (withoutSeq !== undefined && !(withoutSeq.ingestTsMax <= (seen.withoutSeq?.ingestTsMax ?? -Infinity))) seen.withoutSeq = withoutSeq;
      if (firstRow !== undefined && firstRow.seq < (seen.firstRow?.seq ?? Infinity)) seen.firstRow = firstRow;
    }
    return { legacyRows: this.#legacyRows, seen };
  }
}
