import { validateEvent, type AuditEvent } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { EventGenerator } from '@auditlake/testkit';

/**
 * Loads `count` generated events into a store directly (not over HTTP), `batchSize` per
 * append, validated as ingest would; throws unless every event was stored.
 */
export async function loadGenerated(store: AuditStore, generator: EventGenerator, count: number, batchSize: number): Promise<void> {
  const nowMs = Date.now();
  for (let loaded = 0; loaded < count; ) {
    const size = Math.min(batchSize, count - loaded);
    const freshIds = new Set<string>();
    const events: AuditEvent[] = generator.batch(size).map((raw, i) => {
      const event = validateEvent(raw, `events[${i}]`, { nowMs });
      freshIds.add(event.eventId);
      return event;
    });
    const result = await store.append(events, { freshIds });
    if (result.stored.length !== size) throw new Error(`store.append stored ${result.stored.length} of ${size} events`);
    loaded += size;
  }
}
