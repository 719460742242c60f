import { AuditParquetFile, memoizedSource, rowGroupSketches, sketchProbe, type AuditColumnName, type RowGroupSpan, type SketchProbe } from '@auditlake/format';
import type { SearchFilter } from '@auditlake/model';
import type { TierFile, TierSource } from '@auditlake/lake';

/** The columns the free-text `q` is matched against (compileFilter's matchesText). */
export const TEXT_COLUMNS = ['query', 'details', 'resource', 'user_id', 'action', 'tables'] as const satisfies readonly AuditColumnName[];

/**
 * Row groups whose free-text prefilter runs ahead of the one being read. The prefilter of a
 * group is a fetch and then CPU work; starting the next ones first keeps the network busy
 * while this one is searched. Each costs at most one group's text columns in memory.
 */
export const PREFILTER_AHEAD_GROUPS = 4;

/**
 * Neighbouring row groups of a file prefiltered together: one request and one worker message
 * for all (measured over s3rver: a request costs ~4 ms of the reader's CPU, the bytes between
 * two groups' text columns — ~0.4 MB of other columns at 10,000 rows — ~3 ms).
 */
export const PREFILTER_BATCH_GROUPS = 4;

/** A promise's outcome, so a promise started ahead and never awaited cannot reject unhandled. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** The value of a settled outcome, or its error thrown. */
export function unwrap<T>(settled: Settled<T>): T {
  if (!settled.ok) throw settled.error;
  return settled.value;
}

/** One row group to read, in reading order, or a file that could not be opened. */
export type GroupTask =
  | {
      kind: 'group';
      tier: TierSource;
      file: TierFile;
      parquet: AuditParquetFile;
      group: RowGroupSpan & { tsMin: number; tsMax: number };
      /** The prefilter's answer for q (started ahead); undefined without a prefilter. */
      textMayMatch: (() => Promise<Settled<boolean>>) | undefined;
    }
  | { kind: 'failed'; tier: TierSource; file: TierFile; error: unknown };

/**
 * The row groups of a file that overlap the filter's time range, newest first (by their `ts`
 * statistics). A group without statistics counts as spanning all time: it is read, and it
 * never lets the reader stop early.
 */
function rowGroupsNewestFirst(file: AuditParquetFile, filter: SearchFilter): Array<RowGroupSpan & { tsMin: number; tsMax: number }> {
  const from = filter.fromMs ?? Number.MIN_SAFE_INTEGER;
  const to = filter.toMs ?? Number.MAX_SAFE_INTEGER;
  return file.rowGroups
    .map((g) => ({ ...g, tsMin: g.tsMin ?? Number.MIN_SAFE_INTEGER, tsMax: g.tsMax ?? Number.MAX_SAFE_INTEGER }))
    .filter((g) => g.rows > 0 && g.tsMax >= from && g.tsMin <= to)
    .sort((a, b) => b.tsMax - a.tsMax);
}

/** Options of {@link GroupReadAhead}. */
export interface GroupReadAheadOptions {
  /** The files to read, in reading order. */
  files: ReadonlyArray<{ tier: TierSource; file: TierFile }>;
  filter: SearchFilter;
  /** The free-text needle to prefilter groups by; undefined for no prefilter. */
  prefilterQ: string | undefined;
  /** Groups whose prefilter starts before they are asked for (0: none). */
  aheadGroups: number;
  /** Tiers that failed: their files are not opened. */
  failedTiers: ReadonlySet<TierSource>;
  /** False once a file can no longer rank in the page: it is then not opened, nor any after it. */
  mayRank: (file: TierFile) => boolean;
}

/**
 * The row groups of the files, file by file, newest group first, without those whose sketch in
 * the footer (row-group-sketch.ts) rules the filter out, with the free-text prefilter
 * of the next `aheadGroups` groups started before they are asked for. A file is opened (footer
 * from the tier's cache, else fetched) only when its groups are needed or the read-ahead
 * reaches them, and never once it cannot rank. With `aheadGroups` 0 nothing starts early, so
 * reads without a prefilter fetch exactly what they would one by one.
 *
 * `close()` stops it: work already started finishes, its outcome unobserved.
 */
export class GroupReadAhead {
  readonly #options: GroupReadAheadOptions;
  readonly #queued: GroupTask[] = [];
  #nextFile = 0;
  #filesOpened = 0;
  #groupsPruned = 0;
  #closed = false;
  readonly #probe: SketchProbe | undefined;

  constructor(options: GroupReadAheadOptions) {
    if (!Number.isSafeInteger(options.aheadGroups) || options.aheadGroups < 0) throw new TypeError(`aheadGroups must be a non-negative integer, got ${options.aheadGroups}`);
    this.#options = options;
    this.#probe = sketchProbe(options.filter);
  }

  /** The next group to read, or undefined when every file is done (or none can rank). */
  async next(): Promise<GroupTask | undefined> {
    const { files, aheadGroups } = this.#options;
    // One queued (the answer), plus the read-ahead.
    while (!this.#closed && this.#queued.length <= aheadGroups && this.#nextFile < files.length) {
      if (!(await this.#queueNextFile())) break;
    }
    for (const task of this.#queued.slice(0, aheadGroups + 1)) if (task.kind === 'group') void task.textMayMatch?.();
    return this.#queued.shift();
  }

  /** Data files opened so far (their footer read or taken from the cache). */
  get filesOpened(): number {
    return this.#filesOpened;
  }

  /** Row groups in the time range that their sketch ruled out (never fetched). */
  get groupsPruned(): number {
    return this.#groupsPruned;
  }

  /**
   * Drops the rest of `file`'s groups (the page is full of newer events). They leave the queue
   * at once: left there, they would hold the read-ahead's places, and the files after this one
   * (which may still rank) would never be queued.
   */
  skipFile(file: TierFile): void {
    let kept = 0;
    for (const task of this.#queued) if (task.file !== file) this.#queued[kept++] = task;
    this.#queued.length = kept;
  }

  close(): void {
    this.#closed = true;
    this.#queued.length = 0;
  }

  /** Opens the next file and queues its groups; false when it (and so every later file) cannot rank. */
  async #queueNextFile(): Promise<boolean> {
    const { files, failedTiers, mayRank, filter, prefilterQ: q } = this.#options;
    const next = files[this.#nextFile];
    if (next === undefined || !mayRank(next.file)) return false;
    this.#nextFile++;
    const { tier, file } = next;
    if (failedTiers.has(tier)) return true;
    let parquet: AuditParquetFile;
    try {
      const source = memoizedSource(await tier.open(file));
      parquet = await AuditParquetFile.open(source, tier.footers?.get(file.key));
      tier.footers?.set(file.key, parquet.footer);
      this.#filesOpened++;
    } catch (error) {
      this.#queued.push({ kind: 'failed', tier, file, error });
      return true;
    }
    const probe = this.#probe;
    const sketches = probe === undefined ? undefined : rowGroupSketches(parquet.footer);
    for (const group of rowGroupsNewestFirst(parquet, filter)) {
      // A group without a sketch (an older file's) is read: never skipped on a guess.
      if (probe !== undefined && sketches?.[group.index]?.mayMatch(probe) === false) {
        this.#groupsPruned++;
        continue;
      }
      let started: Promise<Settled<boolean>> | undefined;
      const textMayMatch = q === undefined ? undefined : () => (started ??= settle(parquet.rowGroupMayContainText(group.index, q, TEXT_COLUMNS, tier.textProbes)));
      this.#queued.push({ kind: 'group', tier, file, parquet, group, textMayMatch });
    }
    return true;
  }
}
