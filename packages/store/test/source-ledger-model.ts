// A brute-force model of the completeness ledger's rules (docs/integrity.md, "Completeness
// ledger", "Bounds", "Idle sources"), written from the rules and not from source-ledger.ts: per
// source a plain sorted list of ranges, totals summed over every source when asked. The fuzz
// tests apply the same events to it and to real ledgers and compare.
import type { SourceLedgerEntry, SourceLedgerSummary } from '../src/source-ledger.js';

export const MODEL_DAY_MS = 86_400_000;
const SOURCES_MAX = 10_000;
const RETIRE_FROM = 9_000;
const IDLE_DAYS = 30;
const RESERVED = 10;
const PER_SOURCE_MAX = 1_000;
const SHARED_MAX = 100_000;

interface ModelSource {
  ranges: Array<[number, number]>;
  /** Distinct sourceSeqs that arrived (a sourceSeq inside a joined hole is not one). */
  received: number;
  /** The ledger's day number of the source's newest ordered event. */
  lastDay: number | undefined;
}

/** One event as the ledger sees it: `sourceSeq` undefined for an event without one; `ingestTs` undefined when not ordered. */
export interface ModelEvent {
  sourceId: string;
  sourceSeq: number | undefined;
  ingestTs: number | undefined;
}

function spanOf(ranges: ReadonlyArray<readonly [number, number]>): number {
  return ranges.reduce((n, [from, to]) => n + to - from + 1, 0);
}

function missingOf(ranges: ReadonlyArray<readonly [number, number]>): number {
  const first = ranges[0];
  const last = ranges[ranges.length - 1];
  return first === undefined || last === undefined ? 0 : last[1] - first[0] + 1 - spanOf(ranges);
}

export class LedgerModel {
  readonly sources = new Map<string, ModelSource>();
  day: { day: number; number: number } | undefined;
  other = 0;
  retired = { sources: 0, received: 0, missing: 0 };
  /** shared() kept as sources change (summing per event is too slow at 10,000 sources); checkShared compares. */
  #shared = 0;

  /** Throws when the kept count of shared ranges is not the sum over the sources. */
  checkShared(): void {
    if (this.#shared !== this.shared()) throw new Error(`model: shared ${this.#shared} kept, ${this.shared()} summed`);
  }

  /** The shared ranges in use, summed over every source (brute force). */
  shared(): number {
    let n = 0;
    for (const source of this.sources.values()) n += Math.max(0, source.ranges.length - RESERVED);
    return n;
  }

  apply(event: ModelEvent): void {
    if (event.sourceSeq === undefined) return;
    let dayNumber: number | undefined;
    if (event.ingestTs !== undefined) {
      const calendarDay = Math.floor(event.ingestTs / MODEL_DAY_MS);
      let opens = false;
      let first = false;
      if (this.day === undefined) {
        this.day = { day: calendarDay, number: 0 };
        opens = first = true;
      } else if (calendarDay > this.day.day) {
        this.day = { day: calendarDay, number: this.day.number + 1 };
        opens = true;
      }
      dayNumber = this.day.number;
      // The event's own source is active on its day before idle ones are looked for.
      const own = this.sources.get(event.sourceId);
      if (own !== undefined && (own.lastDay === undefined || own.lastDay < dayNumber)) own.lastDay = dayNumber;
      if (opens && first) {
        for (const source of this.sources.values()) source.lastDay ??= dayNumber;
      } else if (opens && this.sources.size >= RETIRE_FROM) {
        for (const [sourceId, source] of [...this.sources]) {
          if ((source.lastDay ?? -Infinity) < dayNumber - IDLE_DAYS) {
            this.retired = { sources: this.retired.sources + 1, received: this.retired.received + source.received, missing: this.retired.missing + missingOf(source.ranges) };
            this.sources.delete(sourceId);
            this.#shared -= Math.max(0, source.ranges.length - RESERVED);
          }
        }
      }
    }
    let source = this.sources.get(event.sourceId);
    if (source === undefined) {
      if (this.sources.size >= SOURCES_MAX) {
        this.other++;
        return;
      }
      source = { ranges: [], received: 0, lastDay: dayNumber ?? this.day?.number };
      this.sources.set(event.sourceId, source);
    }
    this.#add(source, event.sourceSeq);
  }

  #add(source: ModelSource, seq: number): void {
    const ranges = source.ranges;
    // The first range starting after seq (binary search: the model runs over 100,000s of events).
    let low = 0;
    let high = ranges.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((ranges[mid] as [number, number])[0] <= seq) low = mid + 1;
      else high = mid;
    }
    const before = ranges[low - 1];
    if (before !== undefined && before[1] >= seq) return;
    const held = ranges.length;
    const mayAdd = held < RESERVED || (held < PER_SOURCE_MAX && this.#shared < SHARED_MAX);
    source.received++;
    // Inserted as a range of its own, then merged with the neighbours it touches.
    ranges.splice(low, 0, [seq, seq]);
    const after = ranges[low + 1];
    if (after !== undefined && after[0] === seq + 1) ranges.splice(low, 2, [seq, after[1]]);
    const merged = ranges[low] as [number, number];
    if (before !== undefined && before[1] + 1 === seq) ranges.splice(low - 1, 2, [before[0], merged[1]]);
    // A range of its own it may not add: its two oldest are joined instead.
    if (ranges.length > held && !mayAdd && ranges.length > 1) {
      const [a, b] = ranges as [[number, number], [number, number]];
      ranges.splice(0, 2, [a[0], b[1]]);
    }
    this.#shared += Math.max(0, ranges.length - RESERVED) - Math.max(0, held - RESERVED);
  }

  entries(): SourceLedgerEntry[] {
    return [...this.sources.keys()].sort().map((sourceId) => {
      const { ranges, received } = this.sources.get(sourceId) as ModelSource;
      const gaps = ranges.slice(1).map(([from], i) => ({ fromSeq: (ranges[i] as [number, number])[1] + 1, toSeq: from - 1 }));
      return {
        sourceId,
        received,
        firstSourceSeq: (ranges[0] as [number, number])[0],
        contiguousThrough: (ranges[0] as [number, number])[1],
        highestSourceSeq: (ranges[ranges.length - 1] as [number, number])[1],
        gaps,
        gapCount: gaps.length,
        gapsTruncated: false,
        missing: missingOf(ranges),
      };
    });
  }

  summary(): SourceLedgerSummary {
    const entries = this.entries();
    return {
      sources: entries.length,
      sourcesWithGaps: entries.filter((entry) => entry.missing > 0).length,
      missing: entries.reduce((n, entry) => n + entry.missing, 0),
      otherSourceEvents: this.other,
      retiredSources: this.retired.sources,
      retiredMissing: this.retired.missing,
    };
  }

  rangeCount(): number {
    let n = 0;
    for (const source of this.sources.values()) n += source.ranges.length;
    return n;
  }

  /** The keys under `h!` a store holding this ledger has, by the layout of source-ledger-keys.ts. */
  sourceKeys(): Map<string, string> {
    const keys = new Map<string, string>();
    for (const [sourceId, source] of this.sources) {
      for (const [from, to] of source.ranges) keys.set(`h!${sourceId}!${from.toString(16).padStart(16, '0')}`, String(to));
      const joined = spanOf(source.ranges) - source.received;
      if (joined > 0) keys.set(`h!${sourceId}!j`, String(joined));
      if (source.lastDay !== undefined) keys.set(`h!${sourceId}!t`, String(source.lastDay));
    }
    return keys;
  }
}
