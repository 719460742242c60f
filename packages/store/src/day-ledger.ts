import type { Level } from 'level';
import { localKey } from './event-keys.js';
import { SOURCE_ID_KEY, SOURCE_KEY, stringFieldOfJson } from './json-field.js';

/**
 * The completeness ledger's counts by day: for each day (UTC, of the event's own time) and
 * source, how many events this log received, how many retention pruned from it, and how many
 * are tiered. A source is the event's `sourceId` with its `source` (the system that sent it);
 * events without a sourceId count under their `source` alone. The counts change in the same
 * LevelDB batch as what they count (an append, an apply, a prune, a cut suffix, a tiering
 * count), so a crash keeps both or neither.
 *
 * Bounded: a day keeps at most DAY_LEDGER_SOURCES_MAX sources' rows; the events of further
 * sources of that day count together in the day's overflow row (sourceId `*`, source null), so
 * the day's totals stay exact. The rows live in LevelDB; memory holds only the rows changed
 * last (DAY_LEDGER_CACHED_ROWS) and how many rows the days changed last have, whatever the
 * number of days the events' times name.
 */

/** One day of one source, as GET /admin/audit/ledger answers it. */
export interface DayLedgerRow {
  /** `YYYY-MM-DD`, UTC, of the events' time. */
  day: string;
  /** The events' sourceId; null for events sent without one; `*` in the day's overflow row. */
  sourceId: string | null;
  /** The events' source; null only in the day's overflow row (every event has a source). */
  source: string | null;
  /** Events this log received and ordered (a duplicate eventId is not received twice). */
  received: number;
  /** Received and still in the local store: received − pruned. */
  stored: number;
  /** Received events at or below the tiering watermark this node knows (in the tier). */
  tiered: number;
  /** Received events retention deleted from the local store. */
  pruned: number;
}

export type DayCount = 'received' | 'pruned' | 'tiered';

/** Which rows to answer: the days from `fromDay` to `toDay` (both included), optionally of one sourceId. */
export interface DayLedgerFilter {
  fromDay?: string;
  toDay?: string;
  sourceId?: string;
}

/** One page of day rows. */
export interface DayLedgerPage {
  rows: DayLedgerRow[];
  /** Where the following page starts (give it as `after`), null after the last row. */
  next: string | null;
}

interface Row {
  day: string;
  sourceId: string | null;
  source: string | null;
  received: number;
  pruned: number;
  tiered: number;
}

/**
 * Most sources (sourceId with source) one day keeps a row for. Past it, that day's events of
 * further sources are counted in its overflow row: a holder of an ingest token varying
 * `source` or `sourceId` with every event would otherwise add a row per event.
 */
export const DAY_LEDGER_SOURCES_MAX = 10_000;

/** The sourceId of a day's overflow row (its source is null, which no event's is). */
export const OTHER_SOURCES = '*';

/**
 * Rows kept in memory, the ones changed or read for a change last; any other is read from
 * LevelDB when a batch changes it. Varying the event time adds a day (and a row) per event:
 * memory must not hold them all.
 */
export const DAY_LEDGER_CACHED_ROWS = 20_000;

/** Days whose number of rows is kept in memory; another day's is counted from LevelDB when it gets a new row. */
const CACHED_DAYS = 2_000;

/** Key of one day's counts of one source: the day first, so a window is a key range. */
export const DAY_LEDGER_PREFIX = 'y!';

function rowKey(day: string, sourceId: string | null, source: string | null): string {
  return `${DAY_LEDGER_PREFIX}${day}!${JSON.stringify([sourceId, source])}`;
}

function otherKey(day: string): string {
  return rowKey(day, OTHER_SOURCES, null);
}

/** The first key of a day's rows, and the first key after them ('!' + 1 = '"'). */
function dayRange(day: string): { gte: string; lt: string } {
  return { gte: `${DAY_LEDGER_PREFIX}${day}!`, lt: `${DAY_LEDGER_PREFIX}${day}"` };
}

function parseRow(key: string, value: string): Row {
  const dayEnd = key.indexOf('!', DAY_LEDGER_PREFIX.length);
  const [sourceId, source] = JSON.parse(key.slice(dayEnd + 1)) as [string | null, string | null];
  const [received, pruned, tiered] = JSON.parse(value) as [number, number, number];
  return { day: key.slice(DAY_LEDGER_PREFIX.length, dayEnd), sourceId, source, received, pruned, tiered };
}

const DAY_MS = 86_400_000;
let cachedDay = { number: Number.NaN, text: '' };

/** The UTC day of an event time, as `YYYY-MM-DD` (consecutive events nearly always share one). */
export function dayOf(timestampMs: number): string {
  const number = Math.floor(timestampMs / DAY_MS);
  if (number !== cachedDay.number) cachedDay = { number, text: new Date(number * DAY_MS).toISOString().slice(0, 10) };
  return cachedDay.text;
}

/** Anything that takes puts: a chained LevelDB batch. */
interface PutSink {
  put(key: string, value: string): unknown;
}

type Db = Level<string, string>;

/** A bounded map that forgets the entry used longest ago. */
class Recent<V> {
  readonly #map = new Map<string, V>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string): V | undefined {
    const value = this.#map.get(key);
    if (value !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > this.#max) this.#map.delete(this.#map.keys().next().value as string);
  }

  get size(): number {
    return this.#map.size;
  }
}

/** What a change reads from and gives back to its ledger. */
interface LedgerState {
  db: Db;
  rows: Recent<Row>;
  dayRows: Recent<number>;
}

/** Every day's counts of every source, as this log holds them (in LevelDB, the rows changed last also in memory). */
export class DayLedger {
  readonly #state: LedgerState;

  constructor(db: Db) {
    this.#state = { db, rows: new Recent(DAY_LEDGER_CACHED_ROWS), dayRows: new Recent(CACHED_DAYS) };
  }

  /** Changes of one batch: prepared and put into it, and made visible by commit() once it is written. */
  begin(): DayLedgerChange {
    return new DayLedgerChange(this.#state);
  }

  /** Rows held in memory (for tests of the bound). */
  get cachedRows(): number {
    return this.#state.rows.size;
  }

  /** The rows of days from `fromDay` to `toDay` (both included), optionally of one sourceId, by day then source. */
  async rows(filter: DayLedgerFilter = {}): Promise<DayLedgerRow[]> {
    return (await this.page(filter, { limit: Infinity })).rows;
  }

  /**
   * Up to `limit` of those rows, from the first after the position `after` (the `next` of the
   * page before; from the first row without it). `next` is where the following page starts, null
   * after the last row. Pages follow LevelDB's key order; within one, rows are by day then source.
   */
  async page(filter: DayLedgerFilter, page: { after?: string; limit: number }): Promise<DayLedgerPage> {
    const from = filter.fromDay === undefined ? DAY_LEDGER_PREFIX : dayRange(filter.fromDay).gte;
    const after = page.after === undefined ? undefined : DAY_LEDGER_PREFIX + page.after;
    const range = {
      ...(after !== undefined && after >= from ? { gt: after } : { gte: from }),
      lt: filter.toDay === undefined ? `${DAY_LEDGER_PREFIX.slice(0, -1)}"` : dayRange(filter.toDay).lt,
    };
    const picked: Array<[key: string, row: Row]> = [];
    let next: string | null = null;
    const entries = filter.sourceId === undefined ? this.#state.db.iterator(range) : rowsOfSource(this.#state.db, range, filter.sourceId);
    for await (const [key, value] of entries) {
      const row = parseRow(key, value);
      if (row.received === 0 && row.pruned === 0 && row.tiered === 0) continue;
      if (picked.length === page.limit) {
        next = (picked[picked.length - 1] as [string, Row])[0].slice(DAY_LEDGER_PREFIX.length);
        break;
      }
      picked.push([key, row]);
    }
    // Key order as JavaScript compares strings: day first, then source.
    picked.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const rows = picked.map(([, row]) => ({ day: row.day, sourceId: row.sourceId, source: row.source, received: row.received, stored: row.received - row.pruned, tiered: row.tiered, pruned: row.pruned }));
    return { rows, next };
  }
}

/**
 * The rows of one sourceId within `range`, in key order: in each day, a seek to where that
 * source's rows start (`["<sourceId>",` after the day) and another past the day once they end.
 * Filtering every row instead read every source of every day ever counted — up to 10,000 a day,
 * kept for good — for one source's answer.
 */
async function* rowsOfSource(db: Db, range: { gt?: string; gte?: string; lt: string }, sourceId: string): AsyncGenerator<[string, string]> {
  const ofSource = `[${JSON.stringify(sourceId)},`;
  const iterator = db.iterator(range);
  try {
    for (let entry = await iterator.next(); entry !== undefined; ) {
      const key = entry[0];
      const day = key.slice(DAY_LEDGER_PREFIX.length, key.indexOf('!', DAY_LEDGER_PREFIX.length));
      const first = `${dayRange(day).gte}${ofSource}`;
      if (key.startsWith(first)) {
        yield entry;
        entry = await iterator.next();
        continue;
      }
      // Before the source's rows of this day, or past them: on to where they start, or to the next day.
      iterator.seek(key < first ? first : dayRange(day).lt);
      entry = await iterator.next();
    }
  } finally {
    await iterator.close();
  }
}

/**
 * Where a day's number of rows is kept, beside its rows (written with them): counted from its
 * rows instead, a day another node's events had filled took reading 10,001 keys each time its
 * count was not in memory — after a restart, a batch naming 500 such days held the writer 7 s
 * (year-of-operation review). A day without one (rows an earlier version wrote) is counted from
 * its rows once, and its count kept from then on.
 */
const DAY_ROWS_PREFIX = localKey('dayRows!');

function dayRowsKey(day: string): string {
  return DAY_ROWS_PREFIX + day;
}

/** Days whose rows prepare() counts at once (side by side on LevelDB's threads). */
const COUNT_DAYS_AT_ONCE = 64;

/** How many rows of sources a day stores (its overflow row not counted), up to the bound. */
async function countDayRows(db: Db, day: string): Promise<number> {
  const other = otherKey(day);
  const keys = await db.keys({ ...dayRange(day), limit: DAY_LEDGER_SOURCES_MAX + 1 }).all();
  return Math.min(DAY_LEDGER_SOURCES_MAX, keys.filter((key) => key !== other).length);
}

/**
 * The counts one batch changes, kept as differences: they are added to the rows as they are
 * when the batch is put together (prepare() and putChanged(), both inside the writer's queue),
 * so a change counted while other batches were written never writes back a stale row.
 */
export class DayLedgerChange {
  readonly #state: LedgerState;
  /** The differences, by the row the events name. */
  readonly #deltas = new Map<string, Row>();
  /** By the row they go to (the day's overflow row past its bound), with that row as stored. */
  #targets: Map<string, { delta: Row; current: Row | undefined }> | undefined;
  /** Rows per day after this change, for the days it reads or adds rows of. */
  #dayRows = new Map<string, number>();
  /** The days whose count this change writes (it added a row, or counted them from their rows). */
  #countsToKeep = new Set<string>();
  readonly #written = new Map<string, Row>();

  constructor(state: LedgerState) {
    this.#state = state;
  }

  /** Counts one event given by its stored JSON (text or UTF-8 bytes) and its time. */
  countJson(json: string | Buffer, timestampMs: number, count: DayCount, delta = 1): void {
    const source = stringFieldOfJson(json, SOURCE_KEY) ?? '';
    this.count({ timestamp: timestampMs, source, sourceId: stringFieldOfJson(json, SOURCE_ID_KEY) }, count, delta);
  }

  /** Counts one event given by its fields. */
  count(event: { timestamp: number; source: string; sourceId?: string | undefined }, count: DayCount, delta = 1): void {
    const day = dayOf(event.timestamp);
    const sourceId = event.sourceId ?? null;
    const key = rowKey(day, sourceId, event.source);
    let row = this.#deltas.get(key);
    if (row === undefined) {
      row = { day, sourceId, source: event.source, received: 0, pruned: 0, tiered: 0 };
      this.#deltas.set(key, row);
    }
    row[count] += delta;
  }

  /** The rows as stored (from memory, else LevelDB), undefined for those not stored. */
  async #stored(keys: Iterable<string>): Promise<Map<string, Row | undefined>> {
    const found = new Map<string, Row | undefined>();
    const missing: string[] = [];
    for (const key of keys) {
      const row = this.#state.rows.get(key);
      if (row === undefined) missing.push(key);
      else found.set(key, row);
    }
    if (missing.length > 0) {
      const values = await this.#state.db.getMany(missing);
      missing.forEach((key, i) => {
        const value = values[i];
        found.set(key, value === undefined ? undefined : parseRow(key, value));
      });
    }
    return found;
  }

  /**
   * Reads the rows this change adds to, and sends the events of a source new to a day that has
   * DAY_LEDGER_SOURCES_MAX rows already to that day's overflow row. Called right before
   * putChanged, in the same turn of the writer's queue.
   */
  async prepare(): Promise<void> {
    const stored = await this.#stored(this.#deltas.keys());
    // How many rows each day that gets a new one has.
    const newDays = new Set<string>();
    for (const [key, delta] of this.#deltas) if (stored.get(key) === undefined) newDays.add(delta.day);
    const dayRows = new Map<string, number>();
    const uncounted: string[] = [];
    for (const day of newDays) {
      const rows = this.#state.dayRows.get(day);
      if (rows === undefined) uncounted.push(day);
      else dayRows.set(day, rows);
    }
    // The counts kept for them; a day without one is counted from its rows, and its count kept.
    const kept = uncounted.length === 0 ? [] : await this.#state.db.getMany(uncounted.map(dayRowsKey));
    const unkept: string[] = [];
    uncounted.forEach((day, i) => {
      const count = kept[i];
      if (count === undefined) unkept.push(day);
      else dayRows.set(day, Number(count));
    });
    // A batch may name thousands of days (~45 µs each to count): a few dozen at a time.
    for (let i = 0; i < unkept.length; i += COUNT_DAYS_AT_ONCE) {
      await Promise.all(unkept.slice(i, i + COUNT_DAYS_AT_ONCE).map(async (day) => dayRows.set(day, await countDayRows(this.#state.db, day))));
    }
    this.#countsToKeep = new Set(unkept);
    const targets = new Map<string, { delta: Row; current: Row | undefined }>();
    const overflowing: Row[] = [];
    for (const [key, delta] of this.#deltas) {
      if (stored.get(key) === undefined) {
        const rows = dayRows.get(delta.day) as number;
        if (rows >= DAY_LEDGER_SOURCES_MAX) {
          overflowing.push(delta);
          continue;
        }
        dayRows.set(delta.day, rows + 1);
        this.#countsToKeep.add(delta.day);
      }
      targets.set(key, { delta, current: stored.get(key) });
    }
    if (overflowing.length > 0) {
      const others = await this.#stored(new Set(overflowing.map((delta) => otherKey(delta.day))));
      for (const delta of overflowing) {
        const key = otherKey(delta.day);
        let target = targets.get(key);
        if (target === undefined) {
          target = { delta: { day: delta.day, sourceId: OTHER_SOURCES, source: null, received: 0, pruned: 0, tiered: 0 }, current: others.get(key) };
          targets.set(key, target);
        }
        target.delta.received += delta.received;
        target.delta.pruned += delta.pruned;
        target.delta.tiered += delta.tiered;
      }
    }
    this.#targets = targets;
    this.#dayRows = dayRows;
  }

  /** Puts every changed row, as it is now plus this change, into the batch (after prepare()). */
  putChanged(batch: PutSink): void {
    if (this.#deltas.size === 0) return;
    const targets = this.#targets;
    if (targets === undefined) throw new TypeError('DayLedgerChange.putChanged before prepare()');
    for (const [key, { delta, current }] of targets) {
      const row = { ...delta, received: delta.received + (current?.received ?? 0), pruned: delta.pruned + (current?.pruned ?? 0), tiered: delta.tiered + (current?.tiered ?? 0) };
      this.#written.set(key, row);
      batch.put(key, JSON.stringify([row.received, row.pruned, row.tiered]));
    }
    for (const day of this.#countsToKeep) batch.put(dayRowsKey(day), String(this.#dayRows.get(day)));
  }

  /** After the batch was written: what it put becomes the ledger. */
  commit(): void {
    for (const [key, row] of this.#written) this.#state.rows.set(key, row);
    for (const [day, rows] of this.#dayRows) this.#state.dayRows.set(day, rows);
    this.#written.clear();
    this.#deltas.clear();
    this.#dayRows = new Map();
    this.#countsToKeep = new Set();
    this.#targets = undefined;
  }
}
