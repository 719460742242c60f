import { AuditError, AuditErrorCode } from '@auditlake/model';
import { snapshotAncestry, type IcebergSnapshot, type IcebergTableMetadata } from './iceberg-metadata.js';

/**
 * Summary key of the tiering watermark: the highest store `seq` whose event the table holds as
 * of the tableSnapshot, inclusive, as a decimal string (docs/iceberg-layout.md §2, like Flink's
 * `flink.max-committed-checkpoint-id`).
 */
export const WATERMARK_SUMMARY_KEY = 'auditlake.tiering.watermark';

/** Summary key of the `ingest_ts` (epoch ms) of the watermark's event, decimal (may be negative). */
export const WATERMARK_INGEST_TS_SUMMARY_KEY = 'auditlake.tiering.watermark-ingest-ts';

/** Summary key of the stable identity of the table writer (cluster id + table), like `flink.job-id`. */
export const WRITER_ID_SUMMARY_KEY = 'auditlake.tiering.writer-id';

/** Summary key of the leader term that made the commit (diagnostics, fencing audits), decimal. */
export const LEADER_TERM_SUMMARY_KEY = 'auditlake.tiering.leader-term';

/** Tiering progress as a tableSnapshot's summary records it. */
export interface TieringWatermark {
  /** Highest store seq contained in the table (inclusive). A bigint: the summary is a decimal string of any size. */
  seq: bigint;
  /** Stable identity of the writer. Always written by us; absent only in foreign summaries. */
  writerId?: string;
  /** Leader term of the commit. */
  leaderTerm?: number;
  /** `ingest_ts` (epoch ms) of the event at `seq`. */
  ingestTs?: number;
}

/** A watermark and the tableSnapshot that carries it. */
export interface TableWatermark extends TieringWatermark {
  snapshotId: number;
}

/**
 * The summary entries for a watermark, to pass as `summaryExtra` of appendSnapshot. Copy them
 * into **every** snapshot the writer makes (compaction included), so expiring old snapshots
 * never loses the watermark. Throws TypeError for a negative seq, a term that is not a
 * non-negative safe integer, an ingest time that is not a safe integer, or an empty writer id.
 */
export function watermarkSummary(watermark: TieringWatermark): Record<string, string> {
  if (typeof watermark.seq !== 'bigint' || watermark.seq < 0n) throw new TypeError(`watermark seq must be a non-negative bigint, got ${String(watermark.seq)}`);
  const summary: Record<string, string> = { [WATERMARK_SUMMARY_KEY]: watermark.seq.toString() };
  if (watermark.writerId !== undefined) {
    if (watermark.writerId === '') throw new TypeError('watermark writerId must not be empty');
    summary[WRITER_ID_SUMMARY_KEY] = watermark.writerId;
  }
  if (watermark.leaderTerm !== undefined) summary[LEADER_TERM_SUMMARY_KEY] = decimal('leaderTerm', watermark.leaderTerm);
  if (watermark.ingestTs !== undefined) {
    if (!Number.isSafeInteger(watermark.ingestTs)) throw new TypeError(`watermark ingestTs must be an integer of epoch ms, got ${watermark.ingestTs}`);
    summary[WATERMARK_INGEST_TS_SUMMARY_KEY] = String(watermark.ingestTs);
  }
  return summary;
}

/** Options of {@link readWatermarkFromMetadata}. */
export interface ReadWatermarkOptions {
  /** Only accept a watermark written by this writer id (skipping snapshots of other writers). */
  writerId?: string;
}

/**
 * The tiering watermark of the table: from the current snapshot's summary, or — when a foreign
 * engine committed on top without our keys — from the nearest ancestor (following
 * `parent-snapshot-id`, as Flink and Kafka Connect do) that has one, optionally only one
 * written by `writerId`. Undefined when the table has no snapshot, or no retained ancestor
 * carries a watermark. Throws AuditError AUDIT_TIER_TARGET_UNUSABLE when a watermark key holds
 * something other than a decimal number: guessing would re-tier or lose events.
 */
export function readWatermarkFromMetadata(metadata: IcebergTableMetadata, options: ReadWatermarkOptions = {}): TableWatermark | undefined {
  // An expired ancestor ends the walk: what it carried is gone (docs/iceberg-layout.md §2).
  for (const snapshot of snapshotAncestry(metadata)) {
    const watermark = watermarkOf(snapshot);
    if (watermark !== undefined && (options.writerId === undefined || watermark.writerId === options.writerId)) return watermark;
  }
  return undefined;
}

function watermarkOf(snapshot: IcebergSnapshot): TableWatermark | undefined {
  const summary = snapshot.summary;
  const seq = summary[WATERMARK_SUMMARY_KEY];
  if (seq === undefined) return undefined;
  const snapshotId = snapshot['snapshot-id'];
  const watermark: TableWatermark = { snapshotId, seq: BigInt(parseDecimal(snapshotId, WATERMARK_SUMMARY_KEY, seq)) };
  const writerId = summary[WRITER_ID_SUMMARY_KEY];
  if (writerId !== undefined) watermark.writerId = writerId;
  const term = summary[LEADER_TERM_SUMMARY_KEY];
  if (term !== undefined) watermark.leaderTerm = safeNumber(snapshotId, LEADER_TERM_SUMMARY_KEY, term);
  const ingestTs = summary[WATERMARK_INGEST_TS_SUMMARY_KEY];
  if (ingestTs !== undefined) watermark.ingestTs = safeNumber(snapshotId, WATERMARK_INGEST_TS_SUMMARY_KEY, ingestTs, true);
  return watermark;
}

function parseDecimal(snapshotId: number, key: string, value: string, signed = false): string {
  if (!(signed ? /^-?\d+$/ : /^\d+$/).test(value)) {
    throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `tableSnapshot ${snapshotId}: summary ${key} is ${JSON.stringify(value)}, not a decimal number`);
  }
  return value;
}

function safeNumber(snapshotId: number, key: string, value: string, signed = false): number {
  const number = Number(parseDecimal(snapshotId, key, value, signed));
  if (!Number.isSafeInteger(number)) {
    throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `tableSnapshot ${snapshotId}: summary ${key} ${value} is beyond 2^53`);
  }
  return number;
}

function decimal(name: string, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`watermark ${name} must be a non-negative safe integer, got ${value}`);
  return String(value);
}
