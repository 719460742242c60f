import type { TieredEvent } from '@auditlake/format';
import { eraseRecordFields, integrityKindOf, parseErasureDetails, type ErasableField } from '@auditlake/integrity';
import {
  ERASURES_APPLIED_THROUGH_PROPERTY,
  commitProperties,
  erasuresAppliedThrough,
  purgeReplacedFiles,
  rewriteIcebergRows,
  tableWatermark,
  markErasureDone,
  rewriteParquetRows,
  type LoadedTable,
  type MaintenanceContext,
  type ParquetCompactionContext,
} from '@auditlake/lake';
import type { StoredEvent } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';

/** What an erasure pass did. */
export interface TierErasureResult {
  loaded: LoadedTable;
  /** Erasure records applied by this pass. */
  erasures: number;
  filesRewritten: number;
  rowsRewritten: number;
  /** Snapshots expired and files deleted to make the replaced values unreadable. */
  snapshotsExpired: number;
  filesDeleted: number;
}

/** One named record: its seq and every field the erasures name for it. */
export interface ErasureTarget {
  seq: number;
  fields: Set<ErasableField>;
}

/** True for an `audit:EraseFields` record of the log. */
export function isErasureRecord(event: Pick<StoredEvent, 'source' | 'action' | 'decision'>): boolean {
  return integrityKindOf(event.source, event.action, event.decision) === 'erase';
}

/**
 * Where a named record's target is kept: by eventId and seq, since one event can be tiered
 * twice (re-sent without ts after retention deleted its local copy) and an erasure names every copy.
 */
export function targetKey(eventId: string, seq: number): string {
  return `${seq} ${eventId}`;
}

/** Merges erasure records into per-record targets (eventId and seq → fields); each names only records before it, as the store applies them. */
export function addTargets(targets: Map<string, ErasureTarget>, event: Pick<StoredEvent, 'source' | 'action' | 'decision' | 'details' | 'seq'>): boolean {
  if (!isErasureRecord(event)) return false;
  let details;
  try {
    details = parseErasureDetails(event.details);
  } catch {
    return false; // not an erasure the store applied either
  }
  for (const ref of details.records) {
    if (ref.seq >= event.seq) continue;
    const target = targets.get(targetKey(ref.eventId, ref.seq));
    if (target === undefined) targets.set(targetKey(ref.eventId, ref.seq), { seq: ref.seq, fields: new Set(details.fields) });
    else for (const field of details.fields) target.fields.add(field);
  }
  return true;
}

/**
 * The erasure records with the given seqs, read from the local store and merged per named
 * record; `missing`: those the store no longer holds (retention removed them).
 */
async function erasureTargetsOf(store: AuditStore, seqs: readonly number[]): Promise<{ targets: Map<string, ErasureTarget>; erasures: number; missing: number[] }> {
  const targets = new Map<string, ErasureTarget>();
  const missing: number[] = [];
  let erasures = 0;
  for (const seq of seqs) {
    const event = await store.getBySeq(seq);
    if (event === undefined) missing.push(seq);
    else if (addTargets(targets, event)) erasures++;
  }
  return { targets, erasures, missing };
}

/**
 * The erasure records of the log with seq in (afterSeq, throughSeq], found by the store's index
 * of erasure records, merged per named record.
 */
async function erasureTargets(store: AuditStore, afterSeq: number, throughSeq: number): Promise<{ targets: Map<string, ErasureTarget>; erasures: number }> {
  return erasureTargetsOf(store, await store.erasureRecordSeqs(afterSeq, throughSeq));
}

/** The row with the named fields erased; undefined when it is not named or already erased. */
function eraseRow(targets: ReadonlyMap<string, ErasureTarget>, row: TieredEvent): TieredEvent | undefined {
  // The named event at the named seq (a row tiered before the chain has no seq: named as 0).
  const target = targets.get(targetKey(row.eventId, row.seq ?? 0));
  if (target === undefined) return undefined;
  return eraseRecordFields(row, [...target.fields]);
}

/**
 * Applies the log's erasure records to an Iceberg tier (docs/integrity.md "Erasure"), under
 * the caller's commit lock and fence: first it finishes a purge an earlier pass left (a crash
 * after its rewrite), then, when the table's erasure cursor is behind its watermark, it reads
 * the erasure records between the two from the local store and rewrites every data file that
 * holds a named row (one `overwrite` commit that also moves the cursor to the watermark), then
 * expires every older snapshot and deletes the replaced files, so no object keeps an erased value.
 *
 * Only erasure records the table already holds are applied (seq ≤ watermark): a sweep's batch
 * read before an erasure record was appended may hold the named rows unerased, but such a batch
 * ends before that record, so it is committed before the pass that applies it. A record erased
 * twice changes nothing, so a pass stopped anywhere is simply run again.
 *
 * `earlierTarget`: the table is not the sweep's target (it received events before a rename), so
 * no batch is on its way to it and every erasure record of the log up to `throughSeq` (the
 * log's last seq) applies; with none in that range nothing is committed.
 */
export async function applyIcebergErasures(context: MaintenanceContext, loaded: LoadedTable, store: AuditStore, earlierTarget?: { throughSeq: number }): Promise<TierErasureResult> {
  const purged = await purgeReplacedFiles(context, loaded);
  const result: TierErasureResult = { loaded: purged.loaded, erasures: 0, filesRewritten: 0, rowsRewritten: 0, snapshotsExpired: purged.snapshotsExpired, filesDeleted: purged.filesDeleted };
  const cursor = erasuresAppliedThrough(result.loaded.metadata);
  const through = earlierTarget?.throughSeq ?? tableWatermark(result.loaded)?.seq ?? 0;
  if (cursor >= through) return result;
  const { targets, erasures } = await erasureTargets(store, cursor, through);
  const properties = { [ERASURES_APPLIED_THROUGH_PROPERTY]: String(through) };
  if (targets.size === 0) {
    if (earlierTarget !== undefined) return result;
    result.loaded = await commitProperties(context, result.loaded, properties, []);
    return result;
  }
  const rewritten = await rewriteIcebergRows(context, result.loaded, {
    seqs: [...targets.values()].map((target) => target.seq),
    rewrite: (row) => eraseRow(targets, row),
    properties,
  });
  const purge = await purgeReplacedFiles(context, rewritten.loaded);
  return {
    loaded: purge.loaded,
    erasures,
    filesRewritten: rewritten.filesRewritten,
    rowsRewritten: rewritten.rowsRewritten,
    snapshotsExpired: result.snapshotsExpired + purge.snapshotsExpired,
    filesDeleted: result.filesDeleted + purge.filesDeleted,
  };
}

/** What a Parquet erasure pass did. */
export interface ParquetErasureResult {
  erasures: number;
  filesRewritten: number;
  rowsRewritten: number;
  filesDeleted: number;
  /** Erasure records no longer in the local store (retention removed them): not applied. */
  missing: number[];
}

/**
 * Applies erasure records (by seq, read from the local store) to a Parquet location: a row
 * rewrite swapped by compaction markers, the replaced files deleted, then each record marked
 * done (`_auditlake/erasures/<seq>.json`). Idempotent, so a pass stopped anywhere runs again.
 */
export async function applyParquetErasures(context: ParquetCompactionContext, store: AuditStore, erasureSeqs: readonly number[]): Promise<ParquetErasureResult> {
  const { targets, erasures, missing } = await erasureTargetsOf(store, erasureSeqs);
  const rewritten = targets.size === 0 ? { filesRewritten: 0, rowsRewritten: 0, filesDeleted: 0 } : await rewriteParquetRows(context, { seqs: [...targets.values()].map((t) => t.seq), rewrite: (row) => eraseRow(targets, row) });
  for (const seq of erasureSeqs) await markErasureDone(context, seq);
  return { erasures, ...rewritten, missing };
}
