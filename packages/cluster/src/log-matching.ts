import type { TermStart } from '@auditlake/store';

/** One log as the common-prefix search sees it: its term boundaries and where it ends. */
export interface LogShape {
  starts: readonly TermStart[];
  lastSeq: number;
}

function termAt(starts: readonly TermStart[], index: number, seq: number): { term: number; index: number } {
  let i = index;
  while (i + 1 < starts.length && (starts[i + 1] as TermStart).firstSeq <= seq) i++;
  const start = starts[i];
  return { term: start !== undefined && start.firstSeq <= seq ? start.term : 0, index: i };
}

/**
 * The last seq up to which two logs hold the same entries, found from their term boundaries
 * alone, in O(number of terms): where both logs have the same term at a seq they hold the
 * same entry (only that term's leader ordered entries in it, each seq once), and by induction
 * everything before it (log matching). The logs are walked from the start, boundary by
 * boundary, to the first seq where their terms differ; a log matching property broken by
 * anything (a corrupted old log) can then only make the prefix shorter, never longer.
 */
export function commonPrefix(a: LogShape, b: LogShape): number {
  const end = Math.min(a.lastSeq, b.lastSeq);
  let seq = 1;
  let ia = -1;
  let ib = -1;
  while (seq <= end) {
    const ta = termAt(a.starts, ia, seq);
    const tb = termAt(b.starts, ib, seq);
    ia = ta.index;
    ib = tb.index;
    if (ta.term !== tb.term) return seq - 1;
    // Both terms hold until the next boundary of either log.
    const nextA = a.starts[ia + 1]?.firstSeq ?? Number.MAX_SAFE_INTEGER;
    const nextB = b.starts[ib + 1]?.firstSeq ?? Number.MAX_SAFE_INTEGER;
    seq = Math.min(nextA, nextB);
  }
  return end;
}
