import { SOURCE_ID_KEY, SOURCE_KEY, stringFieldOfJson } from './json-field.js';

/**
 * The completeness ledger's counts by day: for each day (UTC, of the event's own time) and
 * source, how many events this log received, how many retention pruned from it, and how many
 * are tiered. A source is the event's `sourceId` with its `source` (the system that sent it);
 * events without a sourceId count under their `source` alone. The counts change in the same
 * LevelDB batch as what they count (an append, an apply, a prune, a cut suffix, a tiering
 * count), so a crash keeps both or neither.
 */

/** One day of one source, as GET /admin/audit/ledger answers it. */
export interface DayLedgerRow {
  /** `YYYY-MM-DD`, UTC, of the events' time. */
  day: string;
  /** The events' sourceId; null for events sent without one. */
  sourceId: string | null;
  source: string;
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

interface Row {
  day: string;
  sourceId: string | null;
  source: string;
  received: number;
  pruned: number;
  tiered: number;
}

/** Key of one day's counts of one source: the day first, so a window is a key range. */
export const DAY_LEDGER_PREFIX = 'y!';

function rowKey(day: string, sourceId: string | null, source: string): string {
  return `${DAY_LEDGER_PREFIX}${day}!${JSON.stringify([sourceId, source])}`;
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

/** Every day's counts of every source, as this log holds them. */
export class DayLedger {
  readonly #rows = new Map<string, Row>();

  constructor(stored: Iterable<[key: string, value: string]> = []) {
    for (const [key, value] of stored) {
      const [sourceId, source] = JSON.parse(key.slice(key.indexOf('!', DAY_LEDGER_PREFIX.length) + 1)) as [string | null, string];
      const [received, pruned, tiered] = JSON.parse(value) as [number, number, number];
      this.#rows.set(key, { day: key.slice(DAY_LEDGER_PREFIX.length, key.indexOf('!', DAY_LEDGER_PREFIX.length)), sourceId, source, received, pruned, tiered });
    }
  }

  /** Changes of one batch: put into it, and made visible by commit() once it is written. */
  begin(): DayLedgerChange {
    return new DayLedgerChange(this.#rows);
  }

  /** The rows of days from `fromDay` to `toDay` (both included), optionally of one sourceId, by day then source. */
  rows(filter: { fromDay?: string; toDay?: string; sourceId?: string } = {}): DayLedgerRow[] {
    const picked: Array<[key: string, row: Row]> = [];
    for (const [key, row] of this.#rows) {
      if (filter.fromDay !== undefined && row.day < filter.fromDay) continue;
      if (filter.toDay !== undefined && row.day > filter.toDay) continue;
      if (filter.sourceId !== undefined && row.sourceId !== filter.sourceId) continue;
      if (row.received === 0 && row.pruned === 0 && row.tiered === 0) continue;
      picked.push([key, row]);
    }
    // Key order: day first, then source.
    picked.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    return picked.map(([, row]) => ({ day: row.day, sourceId: row.sourceId, source: row.source, received: row.received, stored: row.received - row.pruned, tiered: row.tiered, pruned: row.pruned }));
  }
}

/**
 * The counts one batch changes, kept as differences: they are added to the rows as they are
 * when the batch is put together (inside the writer's queue), so a change counted while other
 * batches were written never writes back a stale row.
 */
export class DayLedgerChange {
  readonly #rows: Map<string, Row>;
  readonly #deltas = new Map<string, Row>();
  readonly #written = new Map<string, Row>();

  constructor(rows: Map<string, Row>) {
    this.#rows = rows;
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

  /** Puts every changed row, as it is now plus this change, into the batch. */
  putChanged(batch: PutSink): void {
    for (const [key, delta] of this.#deltas) {
      const current = this.#rows.get(key);
      const row = { ...delta, received: delta.received + (current?.received ?? 0), pruned: delta.pruned + (current?.pruned ?? 0), tiered: delta.tiered + (current?.tiered ?? 0) };
      this.#written.set(key, row);
      batch.put(key, JSON.stringify([row.received, row.pruned, row.tiered]));
    }
  }

  /** After the batch was written: what it put becomes the ledger. */
  commit(): void {
    for (const [key, row] of this.#written) this.#rows.set(key, row);
    this.#written.clear();
    this.#deltas.clear();
  }
}
