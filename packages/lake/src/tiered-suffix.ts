import { readAuditParquetFooter, readWholeAuditParquet, type ParquetFooter, type TieredEvent } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { TierSource } from './tier-source.js';

/**
 * The tier's rows with seqs in (afterSeq, throughSeq], in seq order: the tier's own record of
 * that stretch of the log. A file whose `seq` statistics end at or before `afterSeq` is not
 * read past its footer, so reading the newest stretch of a large tier reads few files. The
 * tier may start inside the range (it was first tiered to later); from its first row on,
 * throws AUDIT_TIER_TARGET_UNUSABLE unless the rows are exactly one per seq, each with its
 * term: rows tiered before the chain have no seq, and two different rows at one seq are two
 * logs in one tier — neither is a record of one log that could be adopted.
 */
export async function readTieredSuffix(source: TierSource, afterSeq: number, throughSeq: number): Promise<TieredEvent[]> {
  const bySeq = new Map<number, TieredEvent>();
  for (const file of await source.listFiles()) {
    const bytes = await source.open(file);
    if (footerSeqMax(await readAuditParquetFooter(bytes)) <= afterSeq) continue;
    for (const row of await readWholeAuditParquet(bytes)) {
      const seq = row.seq;
      if (seq === undefined) throw unusable(source, `${file.key} holds rows without a seq (tiered before the record chain)`);
      if (seq <= afterSeq || seq > throughSeq) continue;
      const other = bySeq.get(seq);
      if (other !== undefined && other.eventId !== row.eventId) throw unusable(source, `seq ${seq} is held by two different events (${other.eventId}, ${row.eventId})`);
      bySeq.set(seq, row);
    }
  }
  const rows: TieredEvent[] = [];
  let first = Number.POSITIVE_INFINITY;
  for (const seq of bySeq.keys()) first = Math.min(first, seq);
  if (first > throughSeq) throw unusable(source, `it holds no row from seq ${afterSeq + 1} to its watermark ${throughSeq}`);
  for (let seq = Math.max(afterSeq + 1, first); seq <= throughSeq; seq++) {
    const row = bySeq.get(seq);
    if (row === undefined) throw unusable(source, `it holds no row at seq ${seq}, below its watermark ${throughSeq}`);
    if (row.term === undefined) throw unusable(source, `its row at seq ${seq} has no term`);
    rows.push(row);
  }
  return rows;
}

/** The greatest `seq` a file's row groups hold by their statistics (Infinity when any group lacks them: read it). */
export function footerSeqMax(footer: ParquetFooter): number {
  let max = 0;
  for (const group of footer.row_groups) {
    const statistics = group.columns.find((column) => column.meta_data?.path_in_schema[0] === 'seq')?.meta_data?.statistics;
    const value = statistics?.max_value ?? statistics?.max;
    if (typeof value === 'bigint' || typeof value === 'number') max = Math.max(max, Number(value));
    else if (Number(group.num_rows) > 0) return Number.POSITIVE_INFINITY;
  }
  return max;
}

function unusable(source: TierSource, why: string): AuditError {
  return new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `${source.name} cannot be adopted into this node's log: ${why}`);
}
