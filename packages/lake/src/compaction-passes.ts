import { AuditError, AuditErrorCode } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
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

/** A file below this share of the target size is small enough to be merged. */
export const SMALL_FILE_SHARE = 0.75;

/** Whether a file of `bytes` is small enough to be merged, for `targetFileSizeBytes`. */
export function isSmallFile(bytes: number, targetFileSizeBytes: number): boolean {
  return bytes < targetFileSizeBytes * SMALL_FILE_SHARE;
}

/** How to read a file for compaction planning: its day partition, its name and its size. */
export interface SmallFileFacts<F> {
  /** Its day partition (an Iceberg day number, a Parquet `event_date`); days sort by it, oldest first. */
  day(file: F): number | string;
  key(file: F): string;
  bytes(file: F): number;
}

/**
 * The small files one pass merges: per day (oldest first; each day's small files by name), those
 * that fit in `inputBytesMax`, for every day where at least two fit; `left` counts the small
 * files of days holding two or more that the pass does not merge.
 *
 * A day's files count against the budget only once two or more of them are merged: a day's lone
 * small file (every compacted day keeps one, under the target) was counted, and such files of
 * the oldest days used up the budget of every pass before the days that had something to merge
 * were reached — each run then merged nothing, for good (review: `filesRewritten` 0,
 * `smallFilesLeft` 4, run after run). A file that does not fit is passed over, not the rest of
 * its day.
 */
export function smallFileGroups<F>(files: Iterable<F>, facts: SmallFileFacts<F>, targetFileSizeBytes: number, inputBytesMax: number): { groups: F[][]; left: number } {
  const byDay = new Map<number | string, F[]>();
  for (const file of files) {
    if (!isSmallFile(facts.bytes(file), targetFileSizeBytes)) continue;
    const day = byDay.get(facts.day(file));
    if (day === undefined) byDay.set(facts.day(file), [file]);
    else day.push(file);
  }
  const groups: F[][] = [];
  let left = 0;
  let budget = inputBytesMax;
  for (const day of [...byDay.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const dayFiles = (byDay.get(day) as F[]).sort((a, b) => facts.key(a).localeCompare(facts.key(b)));
    if (dayFiles.length < 2) continue;
    const group: F[] = [];
    let groupBytes = 0;
    for (const file of dayFiles) {
      const bytes = facts.bytes(file);
      if (groupBytes + bytes > budget) continue;
      groupBytes += bytes;
      group.push(file);
    }
    if (group.length >= 2) {
      groups.push(group);
      budget -= groupBytes;
      left += dayFiles.length - group.length;
    } else left += dayFiles.length;
  }
  return { groups, left };
}

/** What one compaction pass did. */
export interface CompactionPass {
  filesRewritten: number;
  filesAdded: number;
  /** Of the files added, those small enough to be merged again (a day's remainder). */
  smallFilesAdded: number;
  /** Small files worth merging (two or more in their day) the pass's byte budget kept out; absent when none. */
  smallFilesLeft?: number;
  /** Live data files found missing from the bucket (their days were left as they were); absent when none. */
  lostFiles?: string[];
}

/**
 * The bytes of a group's files, fetched for a merge (`fetch` answers undefined for an object the
 * bucket does not hold); or, when some are gone — replaced and deleted since the plan was made,
 * or lost — which ones, for the caller to tell the two apart by the files still live.
 */
export async function fetchGroupFiles<F>(group: readonly F[], fetch: (file: F) => Promise<Uint8Array | undefined>): Promise<{ bytes: Uint8Array[] } | { missing: F[] }> {
  const read = await mapBounded(group, OBJECT_REQUESTS_IN_FLIGHT_MAX, fetch);
  const missing = group.filter((_, i) => read[i] === undefined);
  return missing.length > 0 ? { missing } : { bytes: read as Uint8Array[] };
}

/** What a run's compaction passes did together. */
export interface CompactionPasses<P extends CompactionPass> {
  last: P;
  passes: number;
  filesRewritten: number;
  filesAdded: number;
  /** Every pass's {@link CompactionPass.lostFiles}, each once. */
  lostFiles: string[];
}

/**
 * Runs compaction `pass` (each given the one before) until a pass leaves no small file to
 * merge, leaves no fewer small files than it took (it replaced none — another writer changed
 * them — or what it wrote is as many small files: another pass would find the same), `timeBudgetMs`
 * since the first began has passed, or the fence no longer lets this process commit
 * (leadership lost, node closing). Progress is counted in small files, not files: two files
 * of 0.7 × the target merged into one of the target and one remainder is two files for two,
 * yet one small file fewer (a review saw runs stop there, one pass at a time). Each pass keeps its own byte bound; a pass under way always
 * finishes, so a run ends at most one pass past its budget.
 */
export async function compactInPasses<P extends CompactionPass>(
  pass: (previous: P | undefined) => Promise<P>,
  options: { now: () => number; timeBudgetMs: number; fence: CommitFence },
): Promise<CompactionPasses<P>> {
  const startedMs = options.now();
  let last = await pass(undefined);
  const done: CompactionPasses<P> = { last, passes: 1, filesRewritten: last.filesRewritten, filesAdded: last.filesAdded, lostFiles: [...(last.lostFiles ?? [])] };
  while ((last.smallFilesLeft ?? 0) > 0 && last.smallFilesAdded < last.filesRewritten && options.now() - startedMs < options.timeBudgetMs && options.fence.mayCommit()) {
    last = await pass(last);
    done.last = last;
    done.passes++;
    done.filesRewritten += last.filesRewritten;
    done.filesAdded += last.filesAdded;
    for (const file of last.lostFiles ?? []) if (!done.lostFiles.includes(file)) done.lostFiles.push(file);
  }
  return done;
}

/**
 * Fails a run whose compaction found live data files missing (their rows are gone from the
 * tier), once every other step of the run has run: a lost file stops neither the other days'
 * compaction nor expiry, cleanup and packing (review), and yet no run passes for done while
 * one is missing. Throws AUDIT_OBJECT_NOT_FOUND naming them (the first 10).
 */
export function failOnLostFiles(done: CompactionPasses<CompactionPass> | undefined, where: string): void {
  const lost = done?.lostFiles ?? [];
  if (lost.length === 0) return;
  const named = lost.slice(0, 10).join(', ') + (lost.length > 10 ? ` and ${lost.length - 10} more` : '');
  throw new AuditError(
    AuditErrorCode.OBJECT_NOT_FOUND,
    `${lost.length === 1 ? 'a live data file' : `${lost.length} live data files`} of ${where} ${lost.length === 1 ? 'does' : 'do'} not exist: ${named}; ${lost.length === 1 ? 'its' : 'their'} rows are missing from the tier (the rest of this run was done)`,
  );
}

/** A run's compaction figures: its passes', or none run (compaction skipped). */
export function compactionFigures(done: CompactionPasses<CompactionPass> | undefined): Pick<MaintenanceRunFigures, 'filesRewritten' | 'filesAdded' | 'compactionPasses' | 'smallFilesLeft'> {
  if (done === undefined) return { filesRewritten: 0, filesAdded: 0, compactionPasses: 0, smallFilesLeft: null };
  return { filesRewritten: done.filesRewritten, filesAdded: done.filesAdded, compactionPasses: done.passes, smallFilesLeft: done.last.smallFilesLeft ?? 0 };
}
