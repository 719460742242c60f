import type { MaintenanceRunFigures } from './iceberg-maintenance.js';
import type { CommitFence } from './iceberg-version-commit.js';

/**
 * How long a maintenance run goes on starting compaction passes, by default (15 minutes; the
 * node's `auditlake.audit.tier.maintenance.compaction.time.budget.ms`). One pass reads at most
 * COMPACTION_INPUT_BYTES_MAX of small files, which bounds its memory but not what a run must
 * merge: at 1,000 events/s the sweep writes ~620 MiB of 5,000-event files an hour, and one pass
 * an hourly run merged ~256 MiB, so files piled up without bound. A quarter of the default
 * hourly cron leaves the rest of the hour to the sweep and to searches.
 */
export const COMPACTION_RUN_TIME_BUDGET_MS = 15 * 60 * 1000;

/** What one compaction pass did. */
export interface CompactionPass {
  filesRewritten: number;
  filesAdded: number;
  /** Small files worth merging (two or more in their day) the pass's byte budget kept out; absent when none. */
  smallFilesLeft?: number;
}

/** What a run's compaction passes did together. */
export interface CompactionPasses<P extends CompactionPass> {
  last: P;
  passes: number;
  filesRewritten: number;
  filesAdded: number;
}

/**
 * Runs compaction `pass` (each given the one before) until a pass leaves no small file to
 * merge, leaves no fewer files than it took (it replaced none — another writer changed them —
 * or split what it merged into as many: another pass would find the same), `timeBudgetMs`
 * since the first began has passed, or the fence no longer lets this process commit
 * (leadership lost, node closing). Each pass keeps its own byte bound; a pass under way always
 * finishes, so a run ends at most one pass past its budget.
 */
export async function compactInPasses<P extends CompactionPass>(
  pass: (previous: P | undefined) => Promise<P>,
  options: { now: () => number; timeBudgetMs: number; fence: CommitFence },
): Promise<CompactionPasses<P>> {
  const startedMs = options.now();
  let last = await pass(undefined);
  const done: CompactionPasses<P> = { last, passes: 1, filesRewritten: last.filesRewritten, filesAdded: last.filesAdded };
  while ((last.smallFilesLeft ?? 0) > 0 && last.filesAdded < last.filesRewritten && options.now() - startedMs < options.timeBudgetMs && options.fence.mayCommit()) {
    last = await pass(last);
    done.last = last;
    done.passes++;
    done.filesRewritten += last.filesRewritten;
    done.filesAdded += last.filesAdded;
  }
  return done;
}

/** A run's compaction figures: its passes', or none run (compaction skipped). */
export function compactionFigures(done: CompactionPasses<CompactionPass> | undefined): Pick<MaintenanceRunFigures, 'filesRewritten' | 'filesAdded' | 'compactionPasses' | 'smallFilesLeft'> {
  if (done === undefined) return { filesRewritten: 0, filesAdded: 0, compactionPasses: 0, smallFilesLeft: null };
  return { filesRewritten: done.filesRewritten, filesAdded: done.filesAdded, compactionPasses: done.passes, smallFilesLeft: done.last.smallFilesLeft ?? 0 };
}
