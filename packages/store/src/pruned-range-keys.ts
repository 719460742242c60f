import type { Level } from 'level';
import { localKey, prefixEnd } from './event-keys.js';
import type { PrunedRange } from './pruned-ranges.js';

/**
 * Where the ranges retention deleted are kept: one key per range, by its first seq. They were
 * one value rewritten whole by every prune batch — at the bound of 10,000 ranges (late events
 * interleaved with live ones, an import beside live traffic) 1.1 MB per batch, about as many
 * bytes a day as ingest writes (year-of-operation review). Now a batch writes the ranges it
 * changed.
 */
const PRUNED_RANGE_PREFIX = localKey('prunedRange!');

/** The single value earlier versions kept every range in; moved to one key per range at open. */
const LEGACY_PRUNED_RANGES_KEY = localKey('prunedRanges');

/** A write of the range keys, as a LevelDB batch takes it. */
export type PrunedRangeOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };

function prunedRangeKey(fromSeq: number): string {
  return PRUNED_RANGE_PREFIX + String(fromSeq).padStart(16, '0');
}

function rangeValue(range: PrunedRange): string {
  return JSON.stringify(range.chainHash === undefined ? { toSeq: range.toSeq } : { toSeq: range.toSeq, chainHash: range.chainHash });
}

/** The writes that turn the stored ranges `before` into `after` (both sorted by fromSeq): only what differs. */
export function prunedRangeOps(before: readonly PrunedRange[], after: readonly PrunedRange[]): PrunedRangeOp[] {
  const ops: PrunedRangeOp[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    const old = before[i];
    const now = after[j];
    if (now === undefined || (old !== undefined && old.fromSeq < now.fromSeq)) {
      ops.push({ type: 'del', key: prunedRangeKey((old as PrunedRange).fromSeq) });
      i++;
    } else if (old === undefined || now.fromSeq < old.fromSeq) {
      ops.push({ type: 'put', key: prunedRangeKey(now.fromSeq), value: rangeValue(now) });
      j++;
    } else {
      if (old.toSeq !== now.toSeq || old.chainHash !== now.chainHash) ops.push({ type: 'put', key: prunedRangeKey(now.fromSeq), value: rangeValue(now) });
      i++;
      j++;
    }
  }
  return ops;
}

/** Adds `ops` to a chained LevelDB batch. */
export function putPrunedRangeOps(batch: { put(key: string, value: string): unknown; del(key: string): unknown }, ops: readonly PrunedRangeOp[]): void {
  for (const op of ops) {
    if (op.type === 'put') batch.put(op.key, op.value);
    else batch.del(op.key);
  }
}

/**
 * The stored ranges, sorted. A store an earlier version wrote keeps them in one value: they are
 * moved to their own keys here, in one batch with the old value's delete.
 */
export async function readPrunedRanges(db: Level<string, string>): Promise<PrunedRange[]> {
  const legacy = await db.get(LEGACY_PRUNED_RANGES_KEY);
  if (legacy !== undefined) {
    const ranges = (JSON.parse(legacy) as PrunedRange[]).sort((a, b) => a.fromSeq - b.fromSeq);
    await db.batch([...prunedRangeOps([], ranges), { type: 'del', key: LEGACY_PRUNED_RANGES_KEY }], { sync: true });
    return ranges;
  }
  const ranges: PrunedRange[] = [];
  for (const [key, value] of await db.iterator({ gte: PRUNED_RANGE_PREFIX, lt: prefixEnd(PRUNED_RANGE_PREFIX) }).all()) {
    const { toSeq, chainHash } = JSON.parse(value) as { toSeq: number; chainHash?: string };
    ranges.push({ fromSeq: Number(key.slice(PRUNED_RANGE_PREFIX.length)), toSeq, ...(chainHash === undefined ? {} : { chainHash }) });
  }
  return ranges;
}
