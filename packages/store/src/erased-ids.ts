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
      if (value !== undefined) fields.set(id, fieldsOf(value));
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

/** Ids an erasure names, put in a batch; `commit` once the batch is written. */
export class ErasedIdsChange {
  readonly #db: Level<string, string>;
  readonly #committed: (ids: Iterable<string>) => void;
  readonly #staged = new Map<string, readonly string[]>();

  constructor(db: Level<string, string>, committed: (ids: Iterable<string>) => void) {
    this.#db = db;
    this.#committed = committed;
  }

  /** Records that an erasure erased `fields` of `eventId` (with those erased before). */
  async add(batch: PutSink, eventId: string, fields: readonly string[]): Promise<void> {
    const stored = this.#staged.has(eventId) ? undefined : await this.#db.get(erasedIdKey(eventId));
    const before = this.#staged.get(eventId) ?? (stored === undefined ? [] : fieldsOf(stored));
    const all = [...new Set([...before, ...fields])].sort();
    this.#staged.set(eventId, all);
    batch.put(erasedIdKey(eventId), JSON.stringify(all));
  }

  commit(): void {
    if (this.#staged.size > 0) this.#committed(this.#staged.keys());
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

/** Bits per id of a filter in GrowingBloomFilter, at least (k = 7 probes: under 0.5% false positives each). */
const BITS_PER_ID = 12;
const PROBES = 7;
/**
 * Ids the first filter is sized for (128 KiB); each next one holds twice as many as the one
 * before, so a million ids take five filters (~4 MB) and a lookup asks each.
 */
const FIRST_CAPACITY = 65_536;

/**
 * A Bloom filter over strings that grows without being rebuilt: when its newest filter holds
 * as many ids as it was sized for, a filter twice that size is added, and an id may be held
 * when any filter says so. Never a false negative; under 0.5% false positives per full filter.
 */
export class GrowingBloomFilter {
  readonly #filters: Array<{ bits: Uint32Array; mask: number; count: number; capacity: number }> = [];

  add(id: string): void {
    let filter = this.#filters[this.#filters.length - 1];
    if (filter === undefined || filter.count >= filter.capacity) {
      const capacity = filter === undefined ? FIRST_CAPACITY : filter.capacity * 2;
      // A power of two of bits, at least BITS_PER_ID per id.
      const bits = 2 ** Math.ceil(Math.log2(capacity * BITS_PER_ID));
      filter = { bits: new Uint32Array(bits / 32), mask: bits - 1, count: 0, capacity };
      this.#filters.push(filter);
    }
    const [h1, h2] = hashes(id);
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + Math.imul(i, h2)) & filter.mask;
      filter.bits[bit >>> 5] = (filter.bits[bit >>> 5] as number) | (1 << (bit & 31));
    }
    filter.count++;
  }

  mayHave(id: string): boolean {
    if (this.#filters.length === 0) return false;
    const [h1, h2] = hashes(id);
    for (const filter of this.#filters) {
      let all = true;
      for (let i = 0; i < PROBES && all; i++) {
        const bit = (h1 + Math.imul(i, h2)) & filter.mask;
        all = ((filter.bits[bit >>> 5] as number) & (1 << (bit & 31))) !== 0;
      }
      if (all) return true;
    }
    return false;
  }
}

/** Two 32-bit FNV-1a hashes of the UTF-16 code units (different offsets), the second odd (double hashing). */
function hashes(text: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return [a >>> 0, (b ^ (b >>> 15)) | 1];
}
