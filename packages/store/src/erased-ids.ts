import { ERASABLE_FIELDS, ERASED_MARKER } from '@auditlake/integrity';
import type { AuditEvent, EncodedEvent } from '@auditlake/model';
import type { Level } from 'level';
import { PREFIX, erasedIdKey, prefixEnd } from './event-keys.js';
import { GrowingBloomFilter } from './growing-bloom-filter.js';

/** Anything that takes puts: a chained LevelDB batch. */
interface PutSink {
  put(key: string, value: string): unknown;
}

/**
 * The eventIds erasure records named, each with every field erased under it (`v!<eventId>` →
 * the fields as a JSON array). A re-send of such an event would bring the erased values back,
 * so it is never stored again — unless those fields hold the marker already (the erased copy
 * itself, moved to the outbox by a log cut and ordered again), which brings nothing back.
 * Kept for good: retention and log cuts leave the keys.
 *
 * Read from LevelDB for the events of each append (`view`), not held in memory: a year of
 * erasures can name millions of ids (each request up to 10,000 records), and a set of them in
 * memory grew by ~100–150 bytes per id without bound. In memory is only a Bloom filter of them
 * (GrowingBloomFilter, a few bytes per id): an id it rules out is not read, so ordinary ingest
 * reads nothing (a `getMany` of 500 absent keys measured ~1.4 ms of CPU on a 1M-event store).
 */
export class ErasedIds {
  readonly #db: Level<string, string>;
  readonly #filter = new GrowingBloomFilter();
  #version = 0;

  private constructor(db: Level<string, string>) {
    this.#db = db;
  }

  static async open(db: Level<string, string>): Promise<ErasedIds> {
    const ids = new ErasedIds(db);
    const keys = db.keys({ gte: PREFIX.erasedId, lt: prefixEnd(PREFIX.erasedId) });
    try {
      for (let page = await keys.nextv(10_000); page.length > 0; page = await keys.nextv(10_000)) {
        for (const key of page) ids.#filter.add(key.slice(PREFIX.erasedId.length));
      }
    } finally {
      await keys.close();
    }
    return ids;
  }

  /** Moves on each time an erasure's ids are committed: a view taken before is out of date. */
  get version(): number {
    return this.#version;
  }

  /**
   * Whether `view` still tells the truth about `events`: no erasure committed since it was read,
   * or none that can name one of them (the filter rules each out; an id it may hold, erased
   * before or now, is read again, since its fields may have grown).
   */
  unchangedFor(view: ErasedIdsView, events: ReadonlyArray<{ eventId: string }>): boolean {
    return view.version === this.#version || events.every((event) => !this.#filter.mayHave(event.eventId));
  }

  /** The erased ids among `eventIds` as the store holds them now (committed erasures only). */
  async view(eventIds: readonly string[]): Promise<ErasedIdsView> {
    const version = this.#version;
    const ids = [...new Set(eventIds.filter((id) => this.#filter.mayHave(id)))];
    if (ids.length === 0) return new ErasedIdsView(new Map(), version);
    const values = await this.#db.getMany(ids.map(erasedIdKey));
    const fields = new Map<string, readonly string[]>();
    ids.forEach((id, i) => {
      const value = values[i];
      if (value !== undefined) fields.set(id, erasedFieldsOf(value));
    });
    return new ErasedIdsView(fields, version);
  }

  /** A change to the ids, seen by views only once committed (after its batch is written). */
  begin(): ErasedIdsChange {
    return new ErasedIdsChange(this.#db, (ids) => {
      for (const id of ids) this.#filter.add(id);
      this.#version++;
    });
  }
}

/** The erased ids among some events, read at one version of the ids (ErasedIds.view). */
export class ErasedIdsView {
  readonly #fields: ReadonlyMap<string, readonly string[]>;
  readonly version: number;

  constructor(fields: ReadonlyMap<string, readonly string[]>, version: number) {
    this.#fields = fields;
    this.version = version;
  }

  /** Erased ids among the events asked about. */
  get size(): number {
    return this.#fields.size;
  }

  /** The fields erased under `eventId`, when it is among the erased ids asked about. */
  fieldsOf(eventId: string): readonly string[] | undefined {
    return this.#fields.get(eventId);
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
}

/**
 * The fields of an event erasure replaces, as any copy holds them (a stored event, a row read
 * from a tier): each optional, so a row read for a filter's columns only keeps its shape.
 */
export interface ErasableRow {
  eventId?: string | undefined;
  userId?: string | undefined;
  resource?: string | undefined;
  tables?: readonly string[] | undefined;
  query?: string | undefined;
  details?: string | undefined;
}

/**
 * `rows` with every field the view's erasures erased under their eventIds shown as the marker
 * (`tables` as a list of just the marker), as the store holds its own erased copies; a row no
 * erasure named, and a field a row does not hold, are left as they are.
 */
export function maskErasedRows<R extends ErasableRow>(rows: readonly R[], view: ErasedIdsView): R[] {
  return rows.map((row) => {
    const fields = view.fieldsOf(row.eventId ?? '');
    if (fields === undefined) return row;
    const masked: R = { ...row };
    for (const field of fields) {
      if (field === 'tables') {
        if (masked.tables !== undefined) masked.tables = [ERASED_MARKER];
      } else if ((ERASABLE_FIELDS as readonly string[]).includes(field) && masked[field as keyof ErasableRow] !== undefined) {
        (masked as Record<string, unknown>)[field] = ERASED_MARKER;
      }
    }
    return masked;
  });
}

/** Ids an erasure names, put in a batch; `commit` once the batch is written. */
export class ErasedIdsChange {
  readonly #db: Level<string, string>;
  readonly #committed: (ids: Iterable<string>) => void;
  readonly #staged = new Map<string, ErasedEntry>();
  /** `v!` values read ahead by `load` (undefined: no value), for the adds that follow. */
  readonly #read = new Map<string, string | undefined>();

  constructor(db: Level<string, string>, committed: (ids: Iterable<string>) => void) {
    this.#db = db;
    this.#committed = committed;
  }

  /**
   * Records that an erasure erased `fields` of `eventId` (with those erased before), by the
   * record at `recordSeq` when known: each record is kept with its own fields, so a node that
   * takes the id without the records (erased-ids-sync.ts) erases on each copy only the fields a
   * record after it erased.
   */
  async add(batch: PutSink, eventId: string, fields: readonly string[], recordSeq?: number): Promise<void> {
    const stored = this.#staged.has(eventId) ? undefined : this.#read.has(eventId) ? this.#read.get(eventId) : await this.#db.get(erasedIdKey(eventId));
    const before = this.#staged.get(eventId) ?? (stored === undefined ? { fields: [] } : erasedEntryOf(stored));
    const entry: ErasedEntry = { fields: [...new Set([...before.fields, ...fields])].sort() };
    const records = recordSeq === undefined ? before.records : withRecord(before.records ?? [], recordSeq, fields);
    if (records !== undefined) entry.records = records;
    this.#staged.set(eventId, entry);
    // Staged from now on: the value read ahead is not looked at again (one pull's erasures can name many ids).
    this.#read.delete(eventId);
    // The fields alone as before when no record is known (what older versions wrote and read).
    batch.put(erasedIdKey(eventId), JSON.stringify(entry.records === undefined ? entry.fields : entry));
  }

  /**
   * Reads the `v!` values of `eventIds` in one native read, for the adds of them that follow in
   * this change (each reads its own otherwise: a page of 5,000 erased ids spent ~170 of its
   * ~230 ms awaiting them one by one). Only within the write the change belongs to: what is
   * read here stands for the value on disk until the batch is written.
   */
  async load(eventIds: readonly string[]): Promise<void> {
    const unread = [...new Set(eventIds)].filter((eventId) => !this.#staged.has(eventId) && !this.#read.has(eventId));
    if (unread.length === 0) return;
    const values = await this.#db.getMany(unread.map(erasedIdKey));
    unread.forEach((eventId, i) => this.#read.set(eventId, values[i]));
  }

  commit(): void {
    if (this.#staged.size > 0) this.#committed(this.#staged.keys());
    this.#staged.clear();
    this.#read.clear();
  }
}

/** One erasure record naming an id: its seq and the fields it erased. */
export type ErasedByRecord = [seq: number, fields: string[]];

/**
 * What a `v!` value says: every field erased under the id, and, where known, each erasure
 * record naming it with its own fields (by seq; absent where the id was recorded without them,
 * by an earlier version).
 */
export interface ErasedEntry {
  fields: readonly string[];
  records?: ErasedByRecord[];
}

/** Whether `list` is a list of field names. */
function isNames(list: unknown): list is string[] {
  return Array.isArray(list) && list.every((field) => typeof field === 'string');
}

/** Whether `records` is a list of [seq, fields] (ErasedByRecord). */
export function isErasedByRecords(records: unknown): records is ErasedByRecord[] {
  return Array.isArray(records) && records.every((record: unknown) => Array.isArray(record) && record.length === 2 && Number.isSafeInteger(record[0]) && isNames(record[1]));
}

/**
 * `records` with the record at `seq` erasing `fields` too, by seq. A record another at or after
 * it covers (the same fields or more) is dropped: every copy it names, the later one names too,
 * so an id erased again and again keeps a few records, not one per erasure.
 */
function withRecord(records: readonly ErasedByRecord[], seq: number, fields: readonly string[]): ErasedByRecord[] {
  const same = records.find(([at]) => at === seq);
  const merged: ErasedByRecord = [seq, [...new Set([...(same?.[1] ?? []), ...fields])].sort()];
  const all = [...records.filter(([at]) => at !== seq), merged];
  const covered = ([at, names]: ErasedByRecord) => all.some(([other, otherNames]) => (other > at || (other === at && otherNames !== names)) && names.every((name) => otherNames.includes(name)));
  return all.filter((record) => !covered(record)).sort(([a], [b]) => a - b);
}

/**
 * A `v!` value: a JSON array of field names, or `{fields, records}`; anything else counts as
 * every erasable field, its records unknown (never fewer than were erased).
 */
export function erasedEntryOf(value: string): ErasedEntry {
  try {
    const parsed = JSON.parse(value) as unknown;
    if (isNames(parsed)) return { fields: parsed };
    const entry = parsed as { fields?: unknown; records?: unknown } | null;
    if (typeof entry === 'object' && entry !== null && isNames(entry.fields)) return { fields: entry.fields, ...(isErasedByRecords(entry.records) ? { records: entry.records } : {}) };
  } catch {
    // Not JSON: below.
  }
  return { fields: ERASABLE_FIELDS };
}

/** The fields a `v!` value names (erasedEntryOf). */
export function erasedFieldsOf(value: string): readonly string[] {
  return erasedEntryOf(value).fields;
}
