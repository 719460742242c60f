import { ERASABLE_FIELDS, ERASED_MARKER } from '@auditlake/integrity';
import type { AuditEvent, EncodedEvent } from '@auditlake/model';
import type { Level } from 'level';
import { PREFIX, erasedIdKey, prefixEnd } from './event-keys.js';

/** Anything that takes puts: a chained LevelDB batch. */
interface PutSink {
  put(key: string, value: string): unknown;
}

/**
 * The eventIds erasure records named, each with every field erased under it (`v!<eventId>` →
 * the fields as a JSON array). A re-send of such an event would bring the erased values back,
 * so it is never stored again — unless those fields hold the marker already (the erased copy
 * itself, moved to the outbox by a log cut and ordered again), which brings nothing back.
 * Kept for good: retention and log cuts leave the keys. Erasures are rare and name at most
 * 10,000 records each, so the ids are held in memory (about 100–150 bytes each).
 */
export class ErasedIds {
  readonly #fields = new Map<string, readonly string[]>();

  static async load(db: Level<string, string>): Promise<ErasedIds> {
    const ids = new ErasedIds();
    for (const [key, value] of await db.iterator({ gte: PREFIX.erasedId, lt: prefixEnd(PREFIX.erasedId) }).all()) ids.#fields.set(key.slice(PREFIX.erasedId.length), fieldsOf(value));
    return ids;
  }

  get size(): number {
    return this.#fields.size;
  }

  /**
   * Whether storing `event` would bring erased values back: its id was erased (here, or by an
   * erasure composed earlier in the same write, `erasing`) and a field erased under it holds
   * something other than the marker.
   */
  bringsBack(event: EncodedEvent, erasing?: ReadonlyMap<string, readonly string[]>): boolean {
    const committed = this.#fields.get(event.eventId);
    const pending = erasing?.get(event.eventId);
    if (committed === undefined && pending === undefined) return false;
    const fields = [...(committed ?? []), ...(pending ?? [])];
    const values = JSON.parse(event.json) as AuditEvent;
    return !fields.every((field) => (field === 'tables' ? values.tables.length === 1 && values.tables[0] === ERASED_MARKER : values[field as keyof AuditEvent] === ERASED_MARKER));
  }

  /** A change to the ids, seen here only once committed (after its batch is written). */
  begin(): ErasedIdsChange {
    return new ErasedIdsChange(this.#fields);
  }
}

/** Ids an erasure names, put in a batch; `commit` once the batch is written. */
export class ErasedIdsChange {
  readonly #committed: Map<string, readonly string[]>;
  readonly #staged = new Map<string, readonly string[]>();

  constructor(committed: Map<string, readonly string[]>) {
    this.#committed = committed;
  }

  /** Records that an erasure erased `fields` of `eventId` (with those erased before). */
  add(batch: PutSink, eventId: string, fields: readonly string[]): void {
    const all = [...new Set([...(this.#staged.get(eventId) ?? this.#committed.get(eventId) ?? []), ...fields])].sort();
    this.#staged.set(eventId, all);
    batch.put(erasedIdKey(eventId), JSON.stringify(all));
  }

  commit(): void {
    for (const [eventId, fields] of this.#staged) this.#committed.set(eventId, fields);
    this.#staged.clear();
  }
}


/** The fields a `v!` value names; anything but a JSON array of names counts as every erasable field (never fewer than were erased). */
function fieldsOf(value: string): readonly string[] {
  try {
    const parsed = JSON.parse(value) as unknown;
    if (Array.isArray(parsed) && parsed.every((field) => typeof field === 'string')) return parsed;
  } catch {
    // Not JSON: below.
  }
  return ERASABLE_FIELDS;
}
