import { DEFAULT_SEARCH_LIMIT, upperTimeMs, type SearchFilter } from '@auditlake/model';
import type { Level } from 'level';
import { PREFIX, prefixEnd, timeLowerBound, timeUpperBoundInclusive } from './event-keys.js';
import { getManySideBySide, readAt, type ReadSnapshot } from './point-reads.js';
import { textCandidateBatches, textCandidateBlocks } from './text-candidates.js';
import { INDEX_FIELD, INDEX_PREFIX, TABLE_NAME_PREFIX, UNINDEXED_DECISION, indexRange, indexValuePrefix, suffixOf, suffixTimeMs, type IndexField } from './index-keys.js';

type Db = Level<string, string>;

/**
 * Keys read from each candidate range before choosing. Enough that a range's density in the
 * newest part of the window is a fair estimate, few enough to cost well under a millisecond.
 */
export const PROBE_KEYS = 128;

/** Most table names a `table` substring may match for the table index to be used (a union of their ranges). */
export const TABLE_UNION_MAX = 32;

/**
 * Relative costs, per key, measured against reading an event in a time scan (1): an index key
 * leads to a point read of its event (a seek into another part of the key space), while a key
 * read merely to intersect two indexes is a small sequential read.
 */
const EVENT_GET_COST = 3;
const INDEX_KEY_COST = 0.1;

/** A stream of time key suffixes (`<ts><seq>`), by event time then seq, descending. */
interface SuffixSource {
  next(): Promise<string | undefined>;
  /**
   * The next suffixes, at most `max` (max ≥ 1) and none only at the end: the same suffixes
   * `next()` would give one at a time. A source whose keys are already read hands them over
   * in one step: a user page took ~460 awaited `next()` calls (probe and page), each a turn
   * of the microtask queue, for keys that were in memory.
   */
  nextBatch(max: number): Promise<string[]>;
  close(): Promise<void>;
}

/** nextBatch by `next()`, one suffix at a time (sources that merge or intersect others). */
async function nextBatchOf(source: SuffixSource, max: number): Promise<string[]> {
  const suffixes: string[] = [];
  while (suffixes.length < max) {
    const next = await source.next();
    if (next === undefined) break;
    suffixes.push(next);
  }
  return suffixes;
}

/** One key range read in reverse, in growing batches (a page needs few keys, a full scan many). */
class RangeSource implements SuffixSource {
  readonly #iterator;
  #buffer: string[] = [];
  #at = 0;
  #batch: number;
  #done = false;

  /**
   * `first`: keys of the first read, at least a whole probe (choosing a plan costs one native
   * read per range); an index range that may drive a page reads the page's keys with it, so
   * the page's events can be fetched without another read of keys.
   */
  constructor(db: Db, range: { gte: string; lt: string }, first = PROBE_KEYS, snapshot?: ReadSnapshot) {
    // Cached (classic-level's iterators do not fill LevelDB's block cache by default): every
    // indexed search probes the newest part of its ranges, and its point reads are cached too.
    this.#iterator = db.keys({ ...range, reverse: true, fillCache: true, ...readAt(snapshot) });
    this.#batch = Math.max(PROBE_KEYS, first);
  }

  /** False at the end of the range; else the buffer holds at least one unread key. */
  async #fill(): Promise<boolean> {
    if (this.#at < this.#buffer.length) return true;
    if (this.#done) return false;
    this.#buffer = await this.#iterator.nextv(this.#batch);
    this.#at = 0;
    this.#batch = Math.min(this.#batch * 2, 4096);
    if (this.#buffer.length === 0) this.#done = true;
    return !this.#done;
  }

  async next(): Promise<string | undefined> {
    if (this.#at >= this.#buffer.length && !(await this.#fill())) return undefined;
    // Time keys and index keys alike end with the suffix.
    return suffixOf(this.#buffer[this.#at++] as string);
  }

  async nextBatch(max: number): Promise<string[]> {
    if (this.#at >= this.#buffer.length && !(await this.#fill())) return [];
    const end = Math.min(this.#buffer.length, this.#at + max);
    const suffixes: string[] = [];
    for (let i = this.#at; i < end; i++) suffixes.push(suffixOf(this.#buffer[i] as string));
    this.#at = end;
    return suffixes;
  }

  close(): Promise<void> {
    return this.#iterator.close();
  }
}

/** Several sources merged, each suffix once (an event naming two matching tables is in two ranges). */
class UnionSource implements SuffixSource {
  readonly #sources: SuffixSource[];
  #heads: Array<string | undefined> | undefined;
  #last: string | undefined;

  constructor(sources: SuffixSource[]) {
    this.#sources = sources;
  }

  async next(): Promise<string | undefined> {
    this.#heads ??= await Promise.all(this.#sources.map((s) => s.next()));
    const heads = this.#heads;
    for (;;) {
      let best = -1;
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i];
        if (head !== undefined && (best < 0 || head > (heads[best] as string))) best = i;
      }
      if (best < 0) return undefined;
      const value = heads[best] as string;
      heads[best] = await (this.#sources[best] as SuffixSource).next();
      if (value === this.#last) continue;
      this.#last = value;
      return value;
    }
  }

  nextBatch(max: number): Promise<string[]> {
    return nextBatchOf(this, max);
  }

  async close(): Promise<void> {
    await Promise.all(this.#sources.map((s) => s.close()));
  }
}

/** The suffixes in both sources (both descending: the larger head steps until they meet). */
class IntersectionSource implements SuffixSource {
  readonly #a: SuffixSource;
  readonly #b: SuffixSource;

  constructor(a: SuffixSource, b: SuffixSource) {
    this.#a = a;
    this.#b = b;
  }

  async next(): Promise<string | undefined> {
    let a = await this.#a.next();
    let b = await this.#b.next();
    while (a !== undefined && b !== undefined) {
      if (a === b) return a;
      if (a > b) a = await this.#a.next();
      else b = await this.#b.next();
    }
    return undefined;
  }

  nextBatch(max: number): Promise<string[]> {
    return nextBatchOf(this, max);
  }

  async close(): Promise<void> {
    await Promise.all([this.#a.close(), this.#b.close()]);
  }
}

/** A source whose first PROBE_KEYS suffixes are read ahead, to estimate how dense it is. */
class ProbedSource implements SuffixSource {
  readonly #source: SuffixSource;
  readonly probed: string[] = [];
  exhausted = false;
  #at = 0;

  private constructor(source: SuffixSource) {
    this.#source = source;
  }

  static async probe(source: SuffixSource): Promise<ProbedSource> {
    const probed = new ProbedSource(source);
    while (probed.probed.length < PROBE_KEYS) {
      const next = await source.nextBatch(PROBE_KEYS - probed.probed.length);
      if (next.length === 0) {
        probed.exhausted = true;
        break;
      }
      for (const suffix of next) probed.probed.push(suffix);
    }
    return probed;
  }

  async next(): Promise<string | undefined> {
    if (this.#at < this.probed.length) return this.probed[this.#at++];
    return this.exhausted ? undefined : this.#source.next();
  }

  async nextBatch(max: number): Promise<string[]> {
    if (this.#at < this.probed.length) {
      const end = Math.min(this.probed.length, this.#at + max);
      const suffixes = this.probed.slice(this.#at, end);
      this.#at = end;
      return suffixes;
    }
    return this.exhausted ? [] : this.#source.nextBatch(max);
  }

  /**
   * Matching keys per millisecond of event time below `topMs`; a source read to its end has
   * its exact count instead (-1 density: always cheaper than an unbounded one of any density).
   */
  density(topMs: number): number {
    if (this.exhausted) return this.probed.length / Number.MAX_SAFE_INTEGER;
    const oldest = suffixTimeMs(this.probed[this.probed.length - 1] as string);
    return this.probed.length / Math.max(1, topMs - oldest + 1);
  }

  close(): Promise<void> {
    return this.#source.close();
  }
}

/**
 * The (field, value) ranges a filter restricts to, besides time; a table substring is a union
 * of ranges. `tableNames`: the dictionary's names containing the filter's table, at most
 * TABLE_UNION_MAX + 1 of them (more than TABLE_UNION_MAX: the table index is not used).
 */
function indexedPredicates(filter: Omit<SearchFilter, 'limit'>, tableNames: readonly string[]): Array<Array<{ field: IndexField; value: string }>> | 'none' {
  const predicates: Array<Array<{ field: IndexField; value: string }>> = [];
  if (filter.user !== undefined) predicates.push([{ field: 'user', value: filter.user }]);
  if (filter.engine !== undefined) predicates.push([{ field: 'engine', value: filter.engine }]);
  if (filter.decision !== undefined && filter.decision !== UNINDEXED_DECISION) predicates.push([{ field: 'decision', value: filter.decision }]);
  if (filter.action === 'write') predicates.push([{ field: 'kind', value: 'w' }]);
  if (filter.table !== undefined) {
    // No table by that name was ever indexed: nothing can match.
    if (tableNames.length === 0) return 'none';
    if (tableNames.length <= TABLE_UNION_MAX) predicates.push(tableNames.map((value) => ({ field: 'table', value })));
  }
  return predicates;
}

/** Dictionary keys read from LevelDB at a time, when the writer does not hold every name. */
const TABLE_NAMES_BATCH = 1024;

/**
 * The dictionary's names containing `table`, up to one more than TABLE_UNION_MAX: from the
 * names the writer holds when they are all of them, else read from LevelDB in batches and
 * dropped as they go (the dictionary past the writer's bounds may be far larger than memory
 * should hold), stopping at the first name too many.
 */
async function tableNamesContaining(db: Db, knownTables: ReadonlySet<string> | undefined, table: string, snapshot: ReadSnapshot | undefined): Promise<string[]> {
  const names: string[] = [];
  if (knownTables !== undefined) {
    // Read in the turn the caller's snapshot was taken (nothing is awaited before this), and
    // the writer holds a name from before its batch is written until after its delete is:
    // these names are at least the snapshot's.
    for (const name of knownTables) {
      if (!name.includes(table)) continue;
      names.push(name);
      if (names.length > TABLE_UNION_MAX) break;
    }
    return names;
  }
  // At the search's snapshot: a name a prune dropped after it would leave out events the
  // snapshot still holds, and the search would answer none of them.
  const iterator = db.keys({ gte: TABLE_NAME_PREFIX, lt: prefixEnd(TABLE_NAME_PREFIX), ...readAt(snapshot) });
  try {
    for (;;) {
      const keys = await iterator.nextv(TABLE_NAMES_BATCH);
      if (keys.length === 0) return names;
      for (const key of keys) {
        const name = key.slice(TABLE_NAME_PREFIX.length);
        if (!name.includes(table)) continue;
        names.push(name);
        if (names.length > TABLE_UNION_MAX) return names;
      }
    }
  } finally {
    await iterator.close();
  }
}

/**
 * Those of `names` no table index key names (no stored event names that table). One iterator
 * walks the names in key order: a seek to a name's prefix lands on the first live key at or
 * after it, and every name whose prefix lies between is unused without a seek of its own. A
 * seek per name was quadratic right after a prune: LevelDB skips deleted keys one by one until
 * a live one, past the range asked for, so each seek crossed the deletes of every later name
 * (20,000 names pruned: 21 s, the writer held 11 s).
 */
export async function tableNamesUnused(db: Db, names: readonly string[]): Promise<string[]> {
  const candidates = names.map((name) => ({ name, prefix: indexValuePrefix('table', name) })).sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
  const unused: string[] = [];
  const first = candidates[0];
  if (first === undefined) return unused;
  const iterator = db.keys({ gte: first.prefix, lt: prefixEnd(INDEX_PREFIX + INDEX_FIELD.table) });
  try {
    for (let i = 0; i < candidates.length; ) {
      iterator.seek((candidates[i] as (typeof candidates)[number]).prefix);
      const [live] = await iterator.nextv(1);
      // Every candidate up to the live key found holds no key but the one that key is of.
      for (; i < candidates.length; i++) {
        const { name, prefix } = candidates[i] as (typeof candidates)[number];
        if (live !== undefined && prefix > live) break;
        if (live === undefined || !live.startsWith(prefix)) unused.push(name);
      }
    }
  } finally {
    await iterator.close();
  }
  return unused;
}

/** What an indexed search reads: the chosen index ranges, or the time range (undefined). */
export interface IndexPlan {
  /**
   * Stored event JSON, by event time then seq descending: the events of the time window the
   * indexes kept, in the batches they were read in.
   */
  batches: AsyncGenerator<string[]>;
  /** The indexes read, most selective first (for tests and explanations); 'text' is the free-text sketches. */
  fields: Array<IndexField | 'text'>;
  /** Closes the plan's iterators when `values` is not read to its end (idempotent). */
  close(): Promise<void>;
}

/**
 * Chooses how to answer a search: by the secondary index whose range is the sparsest in the
 * newest part of the window (probed: the first PROBE_KEYS keys of each, and of the time range
 * itself), intersected with the next ones while that is cheaper than reading the events they
 * would rule out; or by the time range (undefined) when no index would read less. Every event
 * a plan yields is only a candidate: the caller still applies the whole filter.
 */
export async function planIndexedSearch(
  db: Db,
  filter: Omit<SearchFilter, 'limit'>,
  knownTables: ReadonlySet<string> | undefined,
  expectedEvents?: number,
  staleSketchBlocks?: ReadonlySet<number>,
  snapshot?: ReadSnapshot,
): Promise<IndexPlan | undefined> {
  const toMs = upperTimeMs(filter);
  const fromMs = filter.fromMs;
  if (toMs !== undefined && fromMs !== undefined && fromMs > toMs) return emptyPlan([]);
  const predicates = indexedPredicates(filter, filter.table !== undefined ? await tableNamesContaining(db, knownTables, filter.table, snapshot) : []);
  if (predicates === 'none') return emptyPlan(['table']);
  const text = filter.q === undefined ? undefined : await textPlan(db, filter.q, fromMs, toMs, staleSketchBlocks, snapshot);
  if (predicates.length === 0) return text;

  const timeRange = {
    gte: fromMs === undefined ? PREFIX.time : timeLowerBound(fromMs),
    lt: toMs === undefined ? prefixEnd(PREFIX.time) : timeUpperBoundInclusive(toMs),
  };
  // Every range is probed at once: the native reads run side by side on LevelDB's threads.
  const [time, ...probed] = await Promise.all([
    ProbedSource.probe(new RangeSource(db, timeRange, PROBE_KEYS, snapshot)),
    ...predicates.map(async (ranges) => {
      const first = firstFetch(expectedEvents);
      const sources = ranges.map(({ field, value }) => new RangeSource(db, indexRange(indexValuePrefix(field, value), fromMs, toMs), first, snapshot));
      return { field: (ranges[0] as { field: IndexField }).field, source: await ProbedSource.probe(sources.length === 1 ? (sources[0] as SuffixSource) : new UnionSource(sources)) };
    }),
  ]);
  await time.close();
  const [newestInWindow] = time.probed;
  if (newestInWindow === undefined) {
    await Promise.all(probed.map((c) => c.source.close()));
    return emptyPlan([]);
  }
  // Densities are measured down from the newest event any index range holds, not from the
  // window's end or its newest event: an empty or sparse stretch above it (a window reaching to
  // now with ingest behind, a night of nothing but the store's own checkpoints) would be added
  // to every range's span alike and make a sparse index look as dense as the time range.
  const top = newestOf(probed.map((c) => c.source.probed[0])) ?? newestInWindow;
  const topMs = suffixTimeMs(top);
  const candidates = probed.map((c) => ({ ...c, density: c.source.density(topMs) }));
  candidates.sort((a, b) => a.density - b.density);
  const driver = candidates[0] as (typeof candidates)[number];
  // The sketches rule out whole blocks without reading an event: preferred unless an index
  // range is small enough to have been read to its end.
  if (text !== undefined && !driver.source.exhausted) {
    await Promise.all(candidates.map((c) => c.source.close()));
    return text;
  }
  await text?.close();
  // An index range read to its end drives whatever the time range holds: no need to judge it.
  const scan = driver.source.exhausted ? { density: 0, above: 0 } : await timeScanEstimate(db, timeRange, time, top, (density) => driver.density * EVENT_GET_COST < density, snapshot);
  const timeDensity = scan.density;
  // Events each way for a page of matches: a point read per match from the index, against the
  // events above its newest key and then the window's events per match below it from the time range.
  const page = expectedEvents ?? DEFAULT_SEARCH_LIMIT;
  if (!driver.source.exhausted && scan.above + page * (timeDensity / driver.density) <= page * EVENT_GET_COST) {
    await Promise.all(candidates.map((c) => c.source.close()));
    return undefined;
  }
  let source: SuffixSource = driver.source;
  const fields: IndexField[] = [driver.field];
  let keptDensity = driver.density;
  for (const candidate of candidates.slice(1)) {
    // Independent predicates assumed: intersecting keeps density_c / density_time of the keys.
    const kept = timeDensity > 0 ? Math.min(1, candidate.density / timeDensity) : 1;
    const readCost = (candidate.density / Math.max(keptDensity, Number.MIN_VALUE)) * INDEX_KEY_COST;
    if (!driver.source.exhausted && readCost < EVENT_GET_COST * (1 - kept)) {
      source = new IntersectionSource(source, candidate.source);
      fields.push(candidate.field);
      keptDensity *= kept;
    } else await candidate.source.close();
  }
  const chosen = source;
  return { batches: eventBatches(db, chosen, firstFetch(expectedEvents), snapshot), fields, close: () => chosen.close() };
}

/** The largest (newest) of some suffixes; undefined when there are none. */
function newestOf(suffixes: ReadonlyArray<string | undefined>): string | undefined {
  let newest: string | undefined;
  for (const suffix of suffixes) if (suffix !== undefined && (newest === undefined || suffix > newest)) newest = suffix;
  return newest;
}

/** Fewest probed time keys at or below `top` that the density below it is judged from. */
const TIME_KEYS_BELOW_MIN = 32;

/** What a scan of the time range would read, judged from its probe (see timeScanEstimate). */
interface TimeScanEstimate {
  /** Events per millisecond at and below `top` (or per the exact count, when the window was read to its end). */
  density: number;
  /** Events above `top`, newer than every indexed key: a scan reads them all before its first match. */
  above: number;
}

/**
 * The time range below the suffix `top` (the newest key any index range holds): its density
 * there, from the probe when enough of its keys lie there; and the events above `top`. When the
 * probe lies mostly above `top`, its own density is used if it already favours the index
 * (`favoursIndex`), as it does when the probe is a few minutes of dense events; otherwise the
 * range below `top` is probed (one more native read: the window's newest events are a sparse
 * stretch above every index range's newest key, or a busy one the index's value had no part in).
 */
async function timeScanEstimate(
  db: Db,
  timeRange: { gte: string; lt: string },
  time: ProbedSource,
  top: string,
  favoursIndex: (density: number) => boolean,
  snapshot?: ReadSnapshot,
): Promise<TimeScanEstimate> {
  // A window read to its end: its exact count (what a scan of it reads).
  if (time.exhausted) return { density: time.density(0), above: 0 };
  const topMs = suffixTimeMs(top);
  const below = time.probed.filter((suffix) => suffix <= top);
  const aboveInProbe = time.probed.length - below.length;
  if (below.length >= TIME_KEYS_BELOW_MIN) return { density: below.length / Math.max(1, topMs - suffixTimeMs(below[below.length - 1] as string) + 1), above: aboveInProbe };
  const newestMs = suffixTimeMs(time.probed[0] as string);
  const whole = time.density(newestMs);
  // The probe reached below `top`: it read every event above. Else there are more than it read,
  // as many as its density over the stretch down to `top` says.
  const above = below.length > 0 ? aboveInProbe : Math.max(aboveInProbe, whole * (newestMs - topMs));
  if (favoursIndex(whole)) return { density: whole, above };
  const range = new RangeSource(db, { gte: timeRange.gte, lt: `${PREFIX.time}${top}\u0000` }, PROBE_KEYS, snapshot);
  try {
    return { density: (await ProbedSource.probe(range)).density(topMs), above };
  } finally {
    await range.close();
  }
}

/**
 * Share of the window's blocks the sketches must rule out for the free-text plan to be used:
 * a needle most blocks may hold is read faster in time order.
 */
const TEXT_PLAN_KEPT_MAX = 0.5;

/**
 * The free-text plan: the blocks whose sketch may hold the needle (and every block in
 * `staleBlocks`, whose sketch an erasure left out of date); undefined when it would not help.
 */
async function textPlan(db: Db, q: string, fromMs: number | undefined, toMs: number | undefined, staleBlocks: ReadonlySet<number> | undefined, snapshot: ReadSnapshot | undefined): Promise<IndexPlan | undefined> {
  // The needle as the stored JSON holds it (escaped), which is what the sketches are built from.
  const needle = JSON.stringify(q).slice(1, -1);
  const found = await textCandidateBlocks(db, needle, fromMs, toMs, staleBlocks, snapshot);
  if (found === undefined || found.candidates.length > TEXT_PLAN_KEPT_MAX * found.overlapping) return undefined;
  return { batches: textCandidateBatches(db, found.candidates, fromMs, toMs, snapshot), fields: ['text'], close: () => Promise.resolve() };
}

/** A plan that knows, without reading events, that nothing matches. */
function emptyPlan(fields: IndexField[]): IndexPlan {
  return { batches: noBatches(), fields, close: () => Promise.resolve() };
}

async function* noBatches(): AsyncGenerator<string[]> {
  // Nothing matches.
}

/** Events fetched by the first point read when the caller did not say how many it expects. */
const FIRST_FETCH_DEFAULT = 32;
/** Fetched beyond what the caller expects: a few candidates may fail the rest of the filter. */
const FETCH_SLACK = 8;
/** Most events one point read fetches. */
const FETCH_MAX = 1024;

function firstFetch(expectedEvents: number | undefined): number {
  return expectedEvents === undefined ? FIRST_FETCH_DEFAULT : Math.min(FETCH_MAX, Math.max(1, expectedEvents + FETCH_SLACK));
}

/**
 * The stored events of the suffixes, fetched in growing batches from `first`, in the suffixes'
 * order, a batch per point read. A page (`first` = the page and a few more) is one read: with
 * growing batches from 32 a 201-event page took three reads one after another, each waiting on
 * the one before.
 */
async function* eventBatches(db: Db, source: SuffixSource, first: number, snapshot: ReadSnapshot | undefined): AsyncGenerator<string[]> {
  try {
    let batch = first;
    for (;;) {
      const keys: string[] = [];
      while (keys.length < batch) {
        const suffixes = await source.nextBatch(batch - keys.length);
        if (suffixes.length === 0) break;
        for (const suffix of suffixes) keys.push(PREFIX.time + suffix);
      }
      if (keys.length === 0) return;
      // Read at the plan's snapshot, where every key names an event. Without one (searchPlan), an
      // event pruned since its index key was read is gone: skipped.
      const values: string[] = [];
      for (const value of await getManySideBySide(db, keys, snapshot)) if (value !== undefined) values.push(value);
      if (values.length > 0) yield values;
      if (keys.length < batch) return;
      batch = Math.min(batch * 2, FETCH_MAX);
    }
  } finally {
    await source.close();
  }
}
