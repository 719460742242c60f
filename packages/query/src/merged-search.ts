import { EVENT_COLUMNS, isPrefilterNeedle, type AuditColumnName, type AuditParquetFile, type RowGroupSpan, type TieredEvent } from '@auditlake/format';
import { GroupReadAhead, PREFILTER_AHEAD_GROUPS, TEXT_COLUMNS, unwrap } from './group-read-ahead.js';
import { AuditError, AuditErrorCode, compileFilter, newestFirst, upperTimeMs, type EventPosition, type SearchFilter, type StoredEvent } from '@auditlake/model';
import type { TierFile, TierSource } from '@auditlake/lake';
import type { ErasableRow } from '@auditlake/store';
import { newestFirstPage } from './newest-first-page.js';
import { newestFirstStream } from './newest-first-stream.js';


/** An event in a merged answer: from the local store (with seq) or only from a tier. */
export type MergedEvent = TieredEvent & { seq?: number };

/**
 * Local matches a batch at a time (the store's searchBatches): reading a page then costs one
 * step of an async generator per native read instead of one per event at each layer.
 */
export interface LocalBatches {
  batches: AsyncIterable<readonly StoredEvent[]>;
}

export interface MergedSearchOptions {
  /** Local matches by event time descending (the store's search, or searchBatches, with the same filter). */
  local: AsyncIterable<StoredEvent> | LocalBatches;
  /**
   * Every location that ever received tiered events; as a function, asked once the local page is
   * read (see mergedSearch).
   */
  tiers: readonly TierSource[] | (() => Promise<readonly TierSource[]>);
  filter: SearchFilter;
  /**
   * Every event at or after this event time is still in the local store (nothing that recent
   * has been deleted locally); undefined when no local event was ever deleted after tiering.
   */
  localCompleteFromMs: number | undefined | (() => number | undefined);
  /** Once aborted, the search throws its reason at the next row group it would read. */
  signal?: AbortSignal;
  /**
   * What erasures erased, applied to every tier row before it is matched or shown (the local
   * store, whose own copies are erased already). A tier's copy of an erased event keeps its
   * values until a sweep rewrites it: without this, a search for the erased value found it
   * there and showed it, as did the Overview's counts (review).
   */
  erased?: ErasureMask;
}

/** Shows tier rows as erasures left them (AuditStore.maskErased). */
export interface ErasureMask {
  maskErased<R extends ErasableRow>(rows: readonly R[]): Promise<readonly R[]>;
}

export interface MergedSearchResult {
  events: MergedEvent[];
  truncated: boolean;
  /** Which tiers could not be read (their events are missing from this answer only). */
  tierNote?: string;
  /** Data files opened, for tests and metrics. */
  filesRead: number;
  /** Row groups in the time range skipped by their footer sketch, for tests and metrics. */
  groupsPruned: number;
  /**
   * Where the next page starts when this one is truncated with no event (every local event it
   * read was a later copy of an event a tier holds from before): the last local event read.
   */
  resumeAfter?: EventPosition;
}

/**
 * The columns the filter's predicates read (besides the time range, which row-group pruning
 * and the reader handle); undefined when nothing but time is filtered.
 */
function predicateColumns(filter: SearchFilter): AuditColumnName[] | undefined {
  const columns = new Set<AuditColumnName>();
  if (filter.user !== undefined) columns.add('user_id');
  if (filter.engine !== undefined) columns.add('source');
  if (filter.table !== undefined) columns.add('tables');
  if (filter.action !== 'all') columns.add('action');
  if (filter.decision !== undefined) columns.add('decision');
  if (filter.q !== undefined) for (const c of TEXT_COLUMNS) columns.add(c);
  return columns.size === 0 ? undefined : [...columns];
}

/** A partially read event with empty values where columns were not read (the predicate ignores them). */
function withDefaults(partial: Partial<TieredEvent>): TieredEvent {
  return { eventId: '', userId: '', source: '', action: '', resource: '', decision: '', tables: [], query: '', details: '', timestamp: 0, ingestTs: 0, ...partial };
}

/**
 * The timestamp of the `want`-th newest candidate (the page's current last place). Keeps only
 * the best `want`, so memory stays bounded by the page, not by what the tiers hold.
 */
function pageLast(candidates: Map<string, MergedEvent>, want: number): number {
  const page = [...candidates.values()].sort(newestFirst).slice(0, want);
  candidates.clear();
  for (const event of page) candidates.set(event.eventId, event);
  return (page[want - 1] as MergedEvent).timestamp;
}

/**
 * Adds the matching events of one row group of a file: with predicates, probing their columns
 * first; with only a time range, reading just the rows that can rank among the `want` newest.
 */
async function readRowGroup(
  file: AuditParquetFile,
  group: RowGroupSpan,
  filter: SearchFilter,
  probeColumns: AuditColumnName[] | undefined,
  matches: (event: TieredEvent) => boolean,
  candidates: Map<string, MergedEvent>,
  want: number,
  erased: ErasureMask | undefined,
): Promise<void> {
  const masked = async <R extends ErasableRow>(rows: readonly R[]) => (erased === undefined ? rows : erased.maskErased(rows));
  const range = { ...(filter.fromMs !== undefined ? { fromMs: filter.fromMs } : {}), ...(filter.toMs !== undefined ? { toMs: filter.toMs } : {}) };
  let events: readonly TieredEvent[];
  if (probeColumns) {
    // Column pushdown: read only what the predicates need first; a group without a match
    // never has its other columns (the large query text among them) fetched.
    const probe = await masked(await file.read({ ...range, rowGroups: [group.index], columns: [...probeColumns, 'event_id'] }));
    const matching = probe.filter((partial) => matches(withDefaults(partial)));
    if (matching.length === 0) return;
    if (matching.every((partial) => candidates.has(partial.eventId ?? ''))) {
      // Every match is on the page already (most often the local copy of a tiered event): only
      // a copy stored earlier under one of those eventIds could change the page. Its seq column
      // alone says; read only for such a group, so other probes read no more than before.
      const seqs = await file.read({ ...range, rowGroups: [group.index], columns: ['event_id', 'seq'] });
      if (!seqs.some((row) => candidates.has(row.eventId ?? '') && mayTake(candidates, row.eventId ?? '', row.seq))) return;
    }
    events = (await file.read({ ...range, rowGroups: [group.index], columns: READ_COLUMNS })) as TieredEvent[];
  } else if (filter.cursor !== undefined && filter.toMs === filter.cursor.timestamp) {
    // A later page: rows at the cursor's own time are partly on earlier pages, so they cannot
    // stand for the group's newest — take all of them (the predicate keeps those after the
    // cursor), then the `want` newest of the strictly older rows.
    const atMs = filter.cursor.timestamp;
    const at = (await file.read({ fromMs: atMs, toMs: atMs, rowGroups: [group.index], columns: READ_COLUMNS })) as TieredEvent[];
    const older = atMs === 0 || (filter.fromMs !== undefined && filter.fromMs > atMs - 1) ? [] : await newestEvents(file, group.index, { ...range, toMs: atMs - 1 }, want);
    events = [...at, ...older];
  } else {
    events = await newestEvents(file, group.index, range, want);
  }
  for (const event of await masked(events)) {
    if (mayTake(candidates, event.eventId, event.seq) && matches(event)) candidates.set(event.eventId, event);
  }
}

/**
 * A group's newest rows in a time range, when every row matches: a row below the newest `want`
 * events cannot make the page (the group alone fills it with newer ones; an eventId already
 * taken counts for the page too). Events, not rows: two copies of one eventId in a group (a
 * re-send stored again after retention keeps its time, so its day, and compaction merges the
 * day's files) are one event on the page, and `want` rows holding one were read as a full page
 * of a group whose older rows then were never reached — an unfiltered page came out short and
 * not truncated, every older event out of reach (review). Rows are read until they hold `want`
 * distinct eventIds or the group ends.
 */
async function newestEvents(file: AuditParquetFile, groupIndex: number, range: { fromMs?: number; toMs?: number }, want: number): Promise<TieredEvent[]> {
  for (let count = want; ; ) {
    const rows = await file.readNewest(groupIndex, { ...range, count, columns: READ_COLUMNS });
    const events = new Set(rows.map((row) => row.eventId)).size;
    if (rows.length < count || events >= want) return rows;
    // Doubled at least: a group where every event is held twice converges in a few reads (review).
    count = Math.max(2 * count, count + want - events);
  }
}

/**
 * The event columns and seq: the seq decides between two copies of one eventId (an answer shows
 * what the event columns hold; seq is not among them).
 */
const READ_COLUMNS: readonly AuditColumnName[] = [...EVENT_COLUMNS, 'seq'];

/**
 * Whether a tier row under `eventId` at `seq` goes into the page: when no copy of that eventId
 * is there yet, or the one there came later in the log. Two copies with one seq are one record
 * (the local copy stays: it carries an erasure the tier may not have been rewritten for yet).
 * Two seqs under one eventId are a re-send stored again after retention deleted the first copy
 * locally (sent without its time, or with a later one): the first stored is the record; a later
 * copy, perhaps with other content, never takes its place on a page both are on (review).
 */
function mayTake(candidates: ReadonlyMap<string, MergedEvent>, eventId: string, seq: number | undefined): boolean {
  const there = candidates.get(eventId);
  if (there === undefined) return true;
  return seq !== undefined && seq < (there.seq ?? Infinity);
}

/**
 * The page of the candidates: the newest `limit`, truncated when more follow. Local events were
 * read down to `lastLocal` only (undefined: all were read). Copies of one eventId are one event
 * at the first-stored copy's time (mayTake), so where a later copy was read for the page and
 * the first one is older (a tier's, or another local one), the page could reach past local
 * events never read: they were skipped, and the cursor moved past them for good (review). So a
 * page ends at the last local event read, and says it is truncated whenever one was read last:
 * the next reads on from there ({@link MergedSearchResult.resumeAfter} when this one is empty).
 */
function pageOf(candidates: ReadonlyMap<string, MergedEvent>, limit: number, lastLocal: MergedEvent | undefined, read: Pick<MergedSearchResult, 'filesRead' | 'groupsPruned'>): MergedSearchResult {
  const page = [...candidates.values()].sort(newestFirst);
  let events = page.slice(0, limit);
  if (lastLocal === undefined) return { events, truncated: page.length > limit, ...read };
  const past = events.findIndex((event) => newestFirst(event, lastLocal) > 0);
  if (past >= 0) events = events.slice(0, past);
  const result: MergedSearchResult = { events, truncated: true, ...read };
  if (events.length === 0) result.resumeAfter = { timestamp: lastLocal.timestamp, ingestTs: lastLocal.ingestTs, eventId: lastLocal.eventId };
  return result;
}

/** The newest `want` local matches, newest first. */
async function localPage(local: AsyncIterable<StoredEvent> | LocalBatches, want: number): Promise<StoredEvent[]> {
  if ('batches' in local) return newestFirstPage(local.batches, want);
  const page: StoredEvent[] = [];
  for await (const event of newestFirstStream(local, want)) page.push(event);
  return page;
}

/**
 * One log over the local store and every tier, de-duplicated by eventId (the copy stored first
 * wins, and of copies of one seq the local one: see mayTake), newest first (event time, ingest time, eventId: model's newestFirst),
 * cut to `limit`. With a cursor, only events strictly after it: since an event keeps its
 * place in that order wherever it is read from, pages never repeat or skip an event while
 * events move from the store to a tier.
 *
 * Tiers are skipped only when they cannot change the answer: the local store alone has more
 * than `limit` matches, all newer than the point from which everything is still local. Else
 * the tiers' committed files are read newest first, skipping files outside [from, to] by the
 * bounds their commits recorded (and row groups by statistics inside each file, and by the
 * sketch in the footer for user, engine, table, decision, action kind and `q`), and stopping
 * once no remaining file can hold an event newer than the current page's last.
 */
export async function mergedSearch(options: MergedSearchOptions): Promise<MergedSearchResult> {
  // On a later page nothing newer than the cursor's time can match: files and row groups
  // past it are skipped like those past `to`.
  const toMs = upperTimeMs(options.filter);
  const filter: SearchFilter = { ...options.filter, ...(toMs !== undefined ? { toMs } : {}) };
  const want = filter.limit + 1;
  // The local page as read, copies of one eventId included (a standby, or a leader after a
  // failover, can hold an event twice: one copy stored again after retention deleted the other
  // on the leader). They are one event, the first stored, as between a local and a tier copy.
  const local = await localPage(options.local, want);
  const candidates = new Map<string, MergedEvent>();
  for (const event of local) if (mayTake(candidates, event.eventId, event.seq)) candidates.set(event.eventId, event);
  // Read as many as asked for: more may follow, below the last one read.
  const lastLocal = local.length >= want ? local[local.length - 1] : undefined;
  // The locations are read after the local page: an event retention deleted before the local
  // read began was tiered to a location recorded before it was deleted, so it is listed then. Read
  // first, a first commit to a new location and a prune of its events between the two reads
  // left them in neither.
  const tiers = typeof options.tiers === 'function' ? await options.tiers() : options.tiers;
  // Likewise the bound above which everything is local: taken before the local read, a prune in
  // between left the bound claiming events the read no longer had.
  const localCompleteFromMs = typeof options.localCompleteFromMs === 'function' ? options.localCompleteFromMs() : options.localCompleteFromMs;
  const localIsEnough = tiers.length === 0 || (lastLocal !== undefined && localCompleteFromMs !== undefined && lastLocal.timestamp >= localCompleteFromMs);
  if (localIsEnough) return pageOf(candidates, filter.limit, lastLocal, { filesRead: 0, groupsPruned: 0 });

  // A file listed and then gone (an erasure's rewrite or a compaction replaced it while the
  // page was read) is no reason to give up on its tier: the tiers are listed and read again,
  // from the local candidates, a few times (review: one such file left a page without any
  // tiered event, its note blaming "not readable Parquet").
  let read = await readTiers(tiers, options, filter, candidates, want);
  let { filesRead, groupsPruned } = read;
  for (let attempt = 1; attempt < TIER_READ_ATTEMPTS && (await listingsMoved(read.gone)); attempt++) {
    read = await readTiers(tiers, options, filter, candidates, want);
    filesRead += read.filesRead;
    groupsPruned += read.groupsPruned;
  }
  const result = pageOf(read.candidates, filter.limit, lastLocal, { filesRead, groupsPruned });
  if (read.skipped.length > 0) result.tierNote = `tiered audit partly unavailable: ${read.skipped.join('; ')}`;
  return result;
}

/** Reads of the tiers for one page, a file listed and then gone before it was read at the last. */
const TIER_READ_ATTEMPTS = 3;

/**
 * Whether a tier that had a listed file gone lists something else now (a rewrite replaced the
 * file): only then can reading again help. A file lost for good (a lifecycle rule, another
 * engine's cleanup) stays listed, and every page would otherwise read every tier three times.
 */
async function listingsMoved(gone: ReadonlyMap<TierSource, string>): Promise<boolean> {
  for (const [tier, key] of gone) {
    try {
      if (!(await tier.listFiles()).some((file) => file.key === key)) return true;
    } catch {
      // Not listable now: reading again would fail the same way.
    }
  }
  return false;
}

/** What one read of the tiers for a page found: the candidates (the local ones and the tiers'), which tiers failed and why, and the listed file found gone, by tier (a tier is read up to its first failure). */
interface TiersRead {
  candidates: Map<string, MergedEvent>;
  skipped: string[];
  gone: Map<TierSource, string>;
  filesRead: number;
  groupsPruned: number;
}

/** The tiers' part of a page: their committed files within the window, newest first, read into a copy of `local` (see mergedSearch). */
async function readTiers(tiers: readonly TierSource[], options: MergedSearchOptions, filter: SearchFilter, local: ReadonlyMap<string, MergedEvent>, want: number): Promise<TiersRead> {
  const candidates = new Map(local);
  const gone = new Map<TierSource, string>();
  const skipped: string[] = [];
  const files: Array<{ tier: TierSource; file: TierFile }> = [];
  await Promise.all(
    tiers.map(async (tier) => {
      try {
        for (const file of await tier.listFiles()) {
          if (filter.fromMs !== undefined && file.tsMax < filter.fromMs) continue;
          if (filter.toMs !== undefined && file.tsMin > filter.toMs) continue;
          files.push({ tier, file });
        }
      } catch (err) {
        skipped.push(`${tier.name}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }),
  );
  files.sort((a, b) => b.file.tsMax - a.file.tsMax);

  const matches = compileFilter(filter);
  const probeColumns = predicateColumns(filter);
  const failedTiers = new Set<TierSource>();
  const fail = (tier: TierSource, file: TierFile, err: unknown) => {
    if (failedTiers.has(tier)) return;
    failedTiers.add(tier);
    if (err instanceof AuditError && err.code === AuditErrorCode.OBJECT_NOT_FOUND) gone.set(tier, file.key);
    skipped.push(`${tier.name}: ${err instanceof Error ? err.message : String(err)}`);
  };
  const prefilterQ = filter.q !== undefined && isPrefilterNeedle(filter.q) ? filter.q : undefined;
  const groups = new GroupReadAhead({
    files,
    filter,
    prefilterQ,
    aheadGroups: prefilterQ === undefined ? 0 : PREFILTER_AHEAD_GROUPS,
    failedTiers,
    // Files are sorted by tsMax: once one cannot rank, none after it can.
    mayRank: (file) => !(candidates.size >= want && file.tsMax < pageLast(candidates, want)),
  });
  try {
    for (let task = await groups.next(); task !== undefined; task = await groups.next()) {
      options.signal?.throwIfAborted();
      const { tier, file } = task;
      if (failedTiers.has(tier)) continue;
      // Every event in this file (and all later ones, sorted by tsMax) is older than the page.
      if (candidates.size >= want && file.tsMax < pageLast(candidates, want)) break;
      if (task.kind === 'failed') {
        fail(tier, file, task.error);
        continue;
      }
      // Row groups newest first: once the page is full, older groups of this file cannot rank.
      if (candidates.size >= want && task.group.tsMax < pageLast(candidates, want)) {
        groups.skipFile(file);
        continue;
      }
      try {
        // Free-text prefilter (started ahead): a group whose text columns cannot hold q, by
        // their dictionaries and raw page bytes, is skipped without decoding a value.
        if (task.textMayMatch !== undefined && !unwrap(await task.textMayMatch())) continue;
        await readRowGroup(task.parquet, task.group, filter, probeColumns, matches, candidates, want, options.erased);
      } catch (err) {
        fail(tier, file, err);
      }
    }
  } finally {
    groups.close();
  }
  return { candidates, skipped, gone, filesRead: groups.filesOpened, groupsPruned: groups.groupsPruned };
}
