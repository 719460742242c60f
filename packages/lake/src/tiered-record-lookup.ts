import { readAuditParquet } from '@auditlake/format';
import type { TierSource } from './tier-source.js';

/**
 * Where named events are in the tier: eventId → seq (0 for a row tiered before the chain, which
 * has none), for each of `eventIds` some committed file of `sources` holds. Reads only the
 * `event_id` and `seq` columns of each file, one file at a time.
 */
export async function findTieredRecords(sources: readonly TierSource[], eventIds: ReadonlySet<string>): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  if (eventIds.size === 0) return found;
  for (const source of sources) {
    for (const file of await source.listFiles()) {
      const rows = await readAuditParquet(await source.open(file), { columns: ['event_id', 'seq'] });
      for (const row of rows) {
        const eventId = row.eventId;
        if (eventId !== undefined && eventIds.has(eventId) && !found.has(eventId)) found.set(eventId, row.seq ?? 0);
      }
      if (found.size === eventIds.size) return found;
    }
  }
  return found;
}
