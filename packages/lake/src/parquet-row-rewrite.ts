import { randomUUID } from 'node:crypto';
import { AuditParquetFile, bytesSource, readAuditParquet, type TieredEvent } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { deleteListedWhileLeader } from './fenced-delete.js';
import type { RowRewrite } from './iceberg-row-rewrite.js';
import { encodeKeyNumber } from './key-number.js';
import { parquetDataPrefix, type CommittedFile } from './parquet-committer.js';
import { compactionKey, createCompactionMarker, liveParquetFiles, nextCompactionGeneration, readContextLog, type CompactionMarker, type ParquetCompactionContext } from './parquet-compaction.js';
import { joinKey, type S3Location } from './s3-location.js';
import { INLINE_TIER_FILE_ENCODER } from './tier-file-encoding.js';

/** Where a Parquet location records each erasure record whose rewrite is done: `<seq, 16 digits>.json`. */
export const ERASURES_DIR = '_auditlake/erasures';

export interface ParquetRowRewriteResult {
  filesRewritten: number;
  rowsRewritten: number;
  /** Replaced files deleted (this pass's, and any an earlier pass left). */
  filesDeleted: number;
}

/** Reads one live file; its rows rewritten, or undefined when none changes (files whose seqs hold none of `seqs` are not read whole). */
async function rewriteFile(context: ParquetCompactionContext, file: CommittedFile, change: Pick<RowRewrite, 'seqs' | 'rewrite'>): Promise<{ rows: TieredEvent[]; changed: number } | undefined> {
  const bytes = await context.objects.get(file.key);
  const wanted = new Set(change.seqs);
  const seqs = await readAuditParquet(bytesSource(bytes), { columns: ['seq'] });
  if (!seqs.some((row) => row.seq === undefined || wanted.has(row.seq))) return undefined;
  const rows = await (await AuditParquetFile.open(bytesSource(bytes))).read({});
  if (rows.length !== file.rows) throw new AuditError(AuditErrorCode.TABLE_INVALID, `${context.objects.url(file.key)} holds ${rows.length} rows, its commit says ${file.rows}`);
  let changed = 0;
  const out = rows.map((row) => {
    const next = change.rewrite(row);
    if (next === undefined) return row;
    changed++;
    return next;
  });
  return changed === 0 ? undefined : { rows: out, changed };
}

/**
 * A row-level rewrite of a Parquet location, with the swap compaction uses: per day, every live
 * file holding a row `change` rewrites is written again whole (new, attempt-unique names) and
 * one compaction marker (`erasure: true`), created only if absent under the day's next
 * generation, swaps them exactly once. Then the files every applied compaction replaced are
 * deleted at once (a compaction's wait for in-flight reads does not apply: the values must go). A pass stopped anywhere is run again: rows already rewritten change nothing, and what an
 * earlier pass left undeleted is deleted. Throws AUDIT_OBJECT_EXISTS when another writer took a
 * day's generation meanwhile (the caller's next pass starts over).
 */
export async function rewriteParquetRows(context: ParquetCompactionContext, change: Pick<RowRewrite, 'seqs' | 'rewrite'>): Promise<ParquetRowRewriteResult> {
  const { objects, location, fence } = context;
  const log = await readContextLog(context);
  const live = liveParquetFiles(log).files;
  const encoder = context.encoder ?? INLINE_TIER_FILE_ENCODER;
  const attempt = `t${fence.term}-${randomUUID().slice(0, 8)}`;
  const byDate = new Map<string, { replaced: CommittedFile[]; files: CommittedFile[] }>();
  let rowsRewritten = 0;
  for (const file of live) {
    const rewritten = await rewriteFile(context, file, change);
    if (rewritten === undefined) continue;
    const encoded = await encoder.encode(rewritten.rows, { kvMetadata: {}, icebergDataFile: false });
    if (encoded.rows !== file.rows) throw new Error(`assertion failed: a row rewrite of ${file.key} read ${file.rows} rows and wrote ${encoded.rows}`);
    const day = byDate.get(file.eventDate) ?? { replaced: [], files: [] };
    const key = joinKey(location.prefix, `event_date=${file.eventDate}/rewritten-${attempt}-${day.files.length}.parquet`);
    await objects.put(key, encoded.bytes, 'application/vnd.apache.parquet');
    day.replaced.push(file);
    day.files.push({ key, eventDate: file.eventDate, rows: encoded.rows, bytes: encoded.bytes.byteLength, tsMin: encoded.tsMin, tsMax: encoded.tsMax });
    byDate.set(file.eventDate, day);
    rowsRewritten += rewritten.changed;
  }
  await context.onStep?.('rewrite-written');
  for (const [date, day] of byDate) {
    const generation = nextCompactionGeneration(log, date);
    const marker: CompactionMarker = { format: 'auditlake-parquet-compaction/1', term: fence.term, committedAtMs: context.now(), eventDate: date, generation, replaced: day.replaced, files: day.files, erasure: true };
    if (!(await createCompactionMarker(context, marker, 'the row rewrite'))) {
      throw new AuditError(AuditErrorCode.OBJECT_EXISTS, `a row rewrite of ${objects.url(compactionKey(location, date, generation))} lost to another writer; it starts over`);
    }
  }
  await context.onStep?.('rewrite-committed');
  const filesDeleted = await deleteErasedFiles(context);
  return { filesRewritten: [...byDate.values()].reduce((n, day) => n + day.replaced.length, 0), rowsRewritten, filesDeleted };
}

/**
 * Deletes every file an applied compaction replaced that is still in the bucket — an erasure's,
 * and an ordinary compaction's still in its grace period too: those hold the rows as they were
 * before, erased values included, and no reader is directed to them any more. Each delete is
 * sent only while `fence.mayCommit()` holds: a pass deposed here stops (AUDIT_NOT_LEADER) before
 * it is recorded done, so the next leader's pass deletes what is left.
 */
async function deleteErasedFiles(context: ParquetCompactionContext): Promise<number> {
  const { replaced } = liveParquetFiles(await readContextLog(context));
  const keys = replaced.map((file) => file.key);
  return deleteListedWhileLeader(context.objects, parquetDataPrefix(context.location), keys, context.fence, `an erasure's deletion of replaced files of s3://${context.location.bucket}/${context.location.prefix}`);
}

/** The key recording that erasure record `seq` is applied to the location's rows. */
export function erasureDoneKey(location: S3Location, seq: number): string {
  return joinKey(location.prefix, `${ERASURES_DIR}/${encodeKeyNumber(seq)}.json`);
}

/** Records that erasure record `seq` is applied (idempotent). */
export async function markErasureDone(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'now'>, seq: number): Promise<void> {
  await context.objects.put(erasureDoneKey(context.location, seq), JSON.stringify({ seq, doneAtMs: context.now() }), 'application/json');
}

/**
 * Seqs of the erasure records whose rewrite is not recorded done at the location, ascending:
 * those its commits hold, and `tieredElsewhere` (erasure records the log tiered before, to
 * this location or another: one committed while this location was an earlier target whose
 * pass did not run must still reach it when it becomes the target again).
 */
export async function pendingParquetErasures(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'log'>, tieredElsewhere: readonly number[] = []): Promise<number[]> {
  const log = await readContextLog(context);
  const recorded = [...(log.checkpoint?.checkpoint.erasureSeqs ?? []), ...log.markers.flatMap((marker) => marker.erasureSeqs ?? []), ...tieredElsewhere];
  if (recorded.length === 0) return [];
  return erasuresNotDone(context, recorded);
}

/** The seqs among `seqs` whose erasure record is not recorded done at the location, ascending and distinct. */
export async function erasuresNotDone(context: Pick<ParquetCompactionContext, 'objects' | 'location'>, seqs: readonly number[]): Promise<number[]> {
  const prefix = joinKey(context.location.prefix, `${ERASURES_DIR}/`);
  const done = new Set((await context.objects.list(prefix)).map((key) => Number(key.slice(prefix.length).replace(/\.json$/, ''))));
  return [...new Set(seqs)].filter((seq) => !done.has(seq)).sort((a, b) => a - b);
}
