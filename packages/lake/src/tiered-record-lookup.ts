import { readAuditParquet } from '@auditlake/format';
import type { TierFile, TierSource } from './tier-source.js';

/** A named event as the tier holds it: its seq, and what it is (an integrity record is told by these). */
export interface TieredRecordRef {
  /** 0 for a row tiered before the chain, which has none. */
  seq: number;
  source: string;
  action: string;
}

const LOOKUP_COLUMNS = ['event_id', 'seq', 'source', 'action', 'ts'] as const;

/**
 * Every copy the tier holds of the named events: eventId → each row's seq, source and action
 * (one per seq). An event is tiered twice when a client re-sent it after local retention had
 * deleted the first copy (the leader's de-duplication looks only at its own log); an erasure
 * must reach both. A re-sent event keeps its event time, so its copies share a day: the files
 * read for copies are those whose time range covers a copy's time — `timestamps` gives it for
 * events the caller already holds (a local copy); the others are first found by reading every
 * file until each has been seen once. Reads only the event id, seq, source, action and time columns.
 */
export async function findTieredRecords(sources: readonly TierSource[], eventIds: ReadonlySet<string>, timestamps: ReadonlyMap<string, number> = new Map()): Promise<Map<string, TieredRecordRef[]>> {
  const found = new Map<string, TieredRecordRef[]>();
  if (eventIds.size === 0) return found;
  const times = new Map([...timestamps].filter(([eventId]) => eventIds.has(eventId)));
  const files: Array<{ source: TierSource; file: TierFile }> = [];
  for (const source of sources) for (const file of await source.listFiles()) files.push({ source, file });
  const read = async ({ source, file }: { source: TierSource; file: TierFile }) => readAuditParquet(await source.open(file), { columns: [...LOOKUP_COLUMNS] });
  // Events with no time known yet: the first copy of each gives it.
  const unplaced = new Set([...eventIds].filter((eventId) => !times.has(eventId)));
  for (const entry of files) {
    if (unplaced.size === 0) break;
    for (const row of await read(entry)) {
      if (row.eventId !== undefined && row.timestamp !== undefined && unplaced.delete(row.eventId)) times.set(row.eventId, row.timestamp);
    }
  }
  const wantedTimes = [...new Set(times.values())];
  for (const entry of files) {
    const { tsMin, tsMax } = entry.file;
    // A file without usable bounds is read.
    if (tsMin <= tsMax && !wantedTimes.some((ts) => ts >= tsMin && ts <= tsMax)) continue;
    for (const row of await read(entry)) {
      const eventId = row.eventId;
      if (eventId === undefined || !times.has(eventId)) continue;
      const copies = found.get(eventId) ?? [];
      const seq = row.seq ?? 0;
      if (!copies.some((copy) => copy.seq === seq)) copies.push({ seq, source: row.source ?? '', action: row.action ?? '' });
      found.set(eventId, copies);
    }
  }
  return found;
}
