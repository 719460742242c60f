import { readAuditParquet } from '@auditlake/format';
import type { TierSource } from './tier-source.js';

/** A named event as the tier holds it: its seq, and what it is (an integrity record is told by these). */
export interface TieredRecordRef {
  /** 0 for a row tiered before the chain, which has none. */
  seq: number;
  source: string;
  action: string;
}

/**
 * Where named events are in the tier: eventId → its seq, source and action, for each of
 * `eventIds` some committed file of `sources` holds. Reads only the `event_id`, `seq`, `source`
 * and `action` columns of each file, one file at a time.
 */
export async function findTieredRecords(sources: readonly TierSource[], eventIds: ReadonlySet<string>): Promise<Map<string, TieredRecordRef>> {
  const found = new Map<string, TieredRecordRef>();
  if (eventIds.size === 0) return found;
  for (const source of sources) {
    for (const file of await source.listFiles()) {
      const rows = await readAuditParquet(await source.open(file), { columns: ['event_id', 'seq', 'source', 'action'] });
      for (const row of rows) {
        const eventId = row.eventId;
        if (eventId !== undefined && eventIds.has(eventId) && !found.has(eventId)) found.set(eventId, { seq: row.seq ?? 0, source: row.source ?? '', action: row.action ?? '' });
      }
      if (found.size === eventIds.size) return found;
    }
  }
  return found;
}
