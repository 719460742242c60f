import { AuditParquetFile, type ParquetFooter, type TieredEvent } from '@auditlake/format';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import type { TierFile, TierSource } from './tier-source.js';

/** A named event as the tier holds it: its seq, and what it is (an integrity record is told by these). */
export interface TieredRecordRef {
  /** 0 for a row tiered before the chain, which has none. */
  seq: number;
  source: string;
  action: string;
  /** The whole row, when the lookup asked for it (TieredLookupOptions.wholeRows). */
  event?: TieredEvent;
}

/** What a lookup narrows itself by, and how much of each match it reads. */
export interface TieredLookupOptions {
  /**
   * Each id's event time, when the copies looked for have it (a client re-sending an event with
   * its own `ts`): a file is read only for the ids whose time lies within the event-time bounds
   * its commit recorded (and a row group only when its `ts` statistics hold it), and a file that
   * holds none of those times is not opened.
   */
  eventTimes?: ReadonlyMap<string, number>;
  /** Read each match's whole row (`event`), not only its seq, source and action. */
  wholeRows?: boolean;
  /**
   * Given: a source that cannot be listed, or a file of it that cannot be read, is reported here
   * and the lookup goes on with the rest (the copies it may hold are then missing from the
   * answer, which the caller must allow for). Absent: the lookup fails with the first such error.
   */
  unreadable?: (source: TierSource, error: unknown) => void;
}

/** What one lookup read, for measuring it (and for tests: which files the ids' statistics ruled out). */
export interface TieredLookupStats {
  /** Data files listed over every source. */
  files: number;
  /** Row groups in those files. */
  rowGroups: number;
  /** Row groups whose `event_id` statistics prove none of the ids is there: not read. */
  rowGroupsSkipped: number;
  /** Row groups whose `event_id` column was read. */
  rowGroupsRead: number;
  /** Files opened (their footer read): those whose declared `event_id` and time bounds may hold an id. */
  filesOpened: number;
}

/**
 * Every copy the tier holds of the named events: eventId → each row's seq, source and action
 * (one per seq). An event is tiered twice when a client re-sent it without `ts` after local
 * retention had deleted the first copy (the leader finds a re-send in the tier only by its
 * event time, and the server's time differs each time); an erasure must reach both. The copies need not share an event time (an event sent without `ts` gets the
 * server's time each time it is stored), so no file is skipped by its time range unless the
 * caller knows each copy's time (`options.eventTimes`): every data file of every source is
 * looked at, and a row group is skipped only when its `event_id` min/max
 * statistics prove none of the ids is in it. Otherwise only its `event_id` column is read, and
 * where it matches, the `seq`, `source` and `action` of the rows from the first match to the last. At most OBJECT_REQUESTS_IN_FLIGHT_MAX
 * files are read at once; footers come from the source's cache when it has one.
 */
export async function findTieredRecords(sources: readonly TierSource[], eventIds: ReadonlySet<string>, stats?: TieredLookupStats, options: TieredLookupOptions = {}): Promise<Map<string, TieredRecordRef[]>> {
  const found = new Map<string, TieredRecordRef[]>();
  if (eventIds.size === 0) return found;
  const { eventTimes, unreadable } = options;
  const wanted = [...eventIds].map((id) => ({ id, bytes: Buffer.from(id, 'utf8'), timeMs: eventTimes?.get(id) }));
  const byTime = new WantedByTime(wanted);
  const files: Array<{ source: TierSource; file: TierFile; wanted: WantedId[] }> = [];
  let work = 0;
  for (const source of sources) {
    let listed: TierFile[];
    try {
      listed = await source.listFiles();
    } catch (err) {
      if (unreadable === undefined) throw err;
      unreadable(source, err);
      continue;
    }
    for (const file of listed) {
      if (stats) stats.files++;
      // Only the ids whose time the file's time range holds (by binary search when the times are
      // known), then a file whose declared event_id bounds rule every id out is not opened (an
      // erasure asks the whole tier: with ids that grow with time, its footers were most of the cost).
      const candidates = eventTimes === undefined ? wanted : byTime.within(file.tsMin, file.tsMax);
      // A year's tier holds hundreds of thousands of files: a turn of the event loop does a
      // bounded share of the comparisons (one lookup of 10,000 ids over 200,000 files, each id
      // compared with each file, held the leader's loop ~9 s, past its lease: review).
      // (A file with no candidate still costs its binary searches and listing entry: ~16.)
      work += candidates.length + 16;
      if (work >= COMPARISONS_PER_TURN) {
        work = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const inFile = candidates.filter((w) => mayHoldIdBetween(file.eventIdMin, file.eventIdMax, w.bytes));
      if (inFile.length > 0) files.push({ source, file, wanted: inFile });
    }
  }
  const spanColumns = options.wholeRows === true ? undefined : (['event_id', 'seq', 'source', 'action'] as const);
  const perFile = await mapBounded(files, OBJECT_REQUESTS_IN_FLIGHT_MAX, async ({ source, file, wanted: inFile }) => {
    try {
      return await copiesInFile(source, file, inFile, spanColumns, stats);
    } catch (err) {
      if (unreadable === undefined) throw err;
      unreadable(source, err);
      return [];
    }
  });
  for (const { eventId, ref } of perFile.flat()) {
    const copies = found.get(eventId) ?? [];
    if (!copies.some((copy) => copy.seq === ref.seq)) copies.push(ref);
    found.set(eventId, copies);
  }
  return found;
}

/** An id looked for, with its UTF-8 bytes (compared with statistics) and its event time when known. */
interface WantedId {
  id: string;
  bytes: Buffer;
  timeMs: number | undefined;
}

/** Id-to-file comparisons per turn of the event loop (findTieredRecords): a few ms of work. */
const COMPARISONS_PER_TURN = 50_000;

/**
 * The ids looked for, ordered by event time, so the ones a file's time range may hold are found
 * by binary search instead of a pass over all of them per file (as mayHoldTime decides: an id of
 * unknown time, or a file without a range, may hold any).
 */
class WantedByTime {
  readonly #timed: WantedId[];
  readonly #untimed: WantedId[];
  readonly #all: WantedId[];

  constructor(wanted: readonly WantedId[]) {
    this.#timed = wanted.filter((w) => w.timeMs !== undefined).sort((a, b) => (a.timeMs as number) - (b.timeMs as number));
    this.#untimed = wanted.filter((w) => w.timeMs === undefined);
    this.#all = [...wanted];
  }

  /** The ids whose time lies in [tsMin, tsMax], and those of unknown time. */
  within(tsMin: number | undefined, tsMax: number | undefined): WantedId[] {
    if (tsMin === undefined || tsMax === undefined) return this.#all;
    const from = this.#firstAtOrAfter(tsMin);
    const to = this.#firstAtOrAfter(tsMax + 1);
    if (from === to) return this.#untimed;
    const inRange = this.#timed.slice(from, to);
    return this.#untimed.length === 0 ? inRange : [...this.#untimed, ...inRange];
  }

  #firstAtOrAfter(ms: number): number {
    let low = 0;
    let high = this.#timed.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (((this.#timed[mid] as WantedId).timeMs as number) < ms) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** The copies of the wanted ids one file holds (see findTieredRecords). */
async function copiesInFile(
  source: TierSource,
  file: TierFile,
  inFile: readonly WantedId[],
  spanColumns: ReadonlyArray<'event_id' | 'seq' | 'source' | 'action'> | undefined,
  stats: TieredLookupStats | undefined,
): Promise<Array<{ eventId: string; ref: TieredRecordRef }>> {
  if (stats) stats.filesOpened++;
  const parquet = await AuditParquetFile.open(await source.open(file), source.footers?.get(file.key));
  source.footers?.set(file.key, parquet.footer);
  const rows: Array<{ eventId: string; ref: TieredRecordRef }> = [];
  for (const group of parquet.rowGroups) {
    if (stats) stats.rowGroups++;
    // With times given, a group whose `ts` statistics exclude an id's time cannot hold it either.
    const candidates = inFile.filter((w) => mayHoldTime(group.tsMin, group.tsMax, w.timeMs) && mayHoldEventId(parquet.footer, group.index, w.bytes));
    if (candidates.length === 0) {
      if (stats) stats.rowGroupsSkipped++;
      continue;
    }
    if (stats) stats.rowGroupsRead++;
    const ids = new Set(candidates.map((w) => w.id));
    const column = await parquet.read({ columns: ['event_id'], rowGroups: [group.index] });
    const matches = column.flatMap((row, i) => (row.eventId !== undefined && ids.has(row.eventId) ? [i] : []));
    if (matches.length === 0) continue;
    // Rows of the group from the first match to the last, their other columns read once.
    const rowStart = group.rowStart + matches[0]!;
    const span = await parquet.read({ ...(spanColumns === undefined ? {} : { columns: spanColumns }), rowGroups: [group.index], rowStart, rowEnd: group.rowStart + matches.at(-1)! + 1 });
    for (const i of matches) {
      const match = span[i - matches[0]!];
      const eventId = column[i]?.eventId;
      if (match === undefined || eventId === undefined || match.eventId !== eventId) continue;
      const ref: TieredRecordRef = { seq: match.seq ?? 0, source: match.source ?? '', action: match.action ?? '' };
      if (spanColumns === undefined) ref.event = match as TieredEvent;
      rows.push({ eventId, ref });
    }
  }
  return rows;
}

/** False only when known event-time bounds (a file's or a row group's) exclude a known time. */
function mayHoldTime(tsMin: number | undefined, tsMax: number | undefined, timeMs: number | undefined): boolean {
  return timeMs === undefined || tsMin === undefined || tsMax === undefined || (tsMin <= timeMs && timeMs <= tsMax);
}

/**
 * False only when the row group's `event_id` statistics prove `id` (UTF-8 bytes) is not in it.
 * Parquet orders byte arrays by their unsigned bytes, so they are compared as bytes. A writer may
 * truncate a bound: a truncated min is a prefix of the true min, so below it is below the true
 * min; a truncated max is a prefix of the true max, so an id above it proves nothing when the
 * max is a prefix of the id. A bound that is missing, not text, or not whole UTF-8 (decoded
 * with a replacement character) rules nothing out.
 */
function mayHoldEventId(footer: ParquetFooter, rowGroup: number, id: Buffer): boolean {
  const chunk = footer.row_groups[rowGroup]?.columns.find((column) => column.meta_data?.path_in_schema[0] === 'event_id');
  const statistics = chunk?.meta_data?.statistics;
  return mayHoldIdBetween(boundBytes(statistics?.min_value ?? statistics?.min), boundBytes(statistics?.max_value ?? statistics?.max), id);
}

/**
 * Whether an id may lie between bounds (either absent: no bound). A maximum cut short and not
 * raised (a truncated bound, as some writers leave it) still holds the ids it begins.
 */
function mayHoldIdBetween(min: Uint8Array | undefined, max: Uint8Array | undefined, id: Buffer): boolean {
  if (min !== undefined && Buffer.compare(id, min) < 0) return false;
  if (max !== undefined && Buffer.compare(id, max) > 0 && Buffer.compare(id.subarray(0, max.length), max) !== 0) return false;
  return true;
}

function boundBytes(value: unknown): Buffer | undefined {
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (typeof value !== 'string' || value.includes('\uFFFD')) return undefined;
  return Buffer.from(value, 'utf8');
}
