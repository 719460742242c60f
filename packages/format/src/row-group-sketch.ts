import { forEachTrigramHash, READ_ACTION, trigramHash, trigramHashes, type ActionKind, type Decision } from '@auditlake/model';
import { splitTables, type AuditRow } from './audit-columns.js';
import type { ParquetFooter } from './parquet-reader.js';
import { Uint32Set } from './uint32-set.js';

/**
 * Row-group sketches: what a tiered file's footer says about each row group beyond its column
 * statistics, so a search for a user, an engine, a table, a decision, an action kind or a
 * free-text `q` skips row groups that cannot hold a match without fetching a data page. The
 * footer is read (and cached) anyway, so a search that matches nothing reads no data at all.
 *
 * Per row group:
 * - the decisions and action kinds present (exact, a few bytes);
 * - one Bloom filter (about one byte per distinct item, two bits set per item) of
 *   - every trigram of the lower-cased text `q` is matched against (query, details, resource,
 *     user, action and each table, each value on its own): the trigram hash is the one the
 *     local store's free-text sketch uses (model's trigram-hash.ts), with the same semantics —
 *     a lower-cased needle contained in a lower-cased value has all its trigrams among the
 *     value's;
 *   - every trigram of each table name as written (the `table` filter is a case-sensitive
 *     substring);
 *   - each user id (exact) and each engine, lower-cased (compared case-insensitively).
 *
 * A sketch only rules row groups out: a group that passes is read and every row is checked
 * exactly. A needle shorter than a trigram (or a table filter shorter than one) rules nothing
 * out. Files without a sketch (written before it existed, or by another writer), a sketch in a
 * version this code does not know, or one whose row counts disagree with the footer's row
 * groups are read in full: no pruning, never a wrong answer.
 *
 * Stored as footer key-value metadata under {@link ROW_GROUP_SKETCH_KEY}: JSON, the Bloom
 * filters in base64 (footer values are strings to every Parquet reader).
 */
export const ROW_GROUP_SKETCH_KEY = 'auditlake.row_group_sketch';

/** Bumped when the layout or a hash changes; a reader ignores versions it does not know. */
export const ROW_GROUP_SKETCH_VERSION = 1;

/**
 * Bloom bits per distinct item. With two bits set per item a filter is ~22% full, so a
 * single item (a user) passes a group without it ~5% of the time and a five-trigram needle
 * ~1 in 4·10⁶. Measured on generated events: ~7,700 distinct items per 10,000 events, ~7.6 KiB.
 */
export const SKETCH_BITS_PER_ITEM = 8;
const HASHES_PER_ITEM = 2;
/** Smallest filter (64 bytes): a group of a handful of events costs little either way. */
const SKETCH_BITS_MIN = 512;

/** Domain seeds, so a user id and a trigram that hash alike do not stand for each other. */
const TABLE_SEED = 0x7f4a7c15;
const USER_SEED = 0x2545f491;
const ENGINE_SEED = 0x61c88647;

/** murmur3's 32-bit finalizer: spreads every input bit over the output. */
function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** FNV-1a over the UTF-16 code units from `seed`, finalized. */
function stringHash(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return mix32(h);
}

function tableTrigram(hash: number): number {
  return mix32(hash ^ TABLE_SEED);
}

/** Adds the trigram hashes of `text`: forEachTrigramHash's loop, inlined for the long columns. */
function addTextTrigrams(items: ItemSink, text: string): void {
  if (text.length < 3) return;
  let a = text.charCodeAt(0);
  let b = text.charCodeAt(1);
  for (let i = 2; i < text.length; i++) {
    const c = text.charCodeAt(i);
    items.add(trigramHash(a, b, c));
    a = b;
    b = c;
  }
}

/** `code` lower-cased, for an ASCII code unit (below 0x80). */
function asciiLower(code: number): number {
  return code >= 0x41 && code <= 0x5a ? code + 0x20 : code;
}

/**
 * Which lower-cased ASCII trigrams a row group's text has given already: one bit per trigram of
 * three code units below 0x80 (7 bits each, 2^21 bits, 256 KiB), cleared for each row group.
 * Query and details text repeat their trigrams heavily (about 7,700 distinct in 800,000 per
 * 10,000 generated events), and testing a bit costs a fraction of hashing the trigram and
 * probing the item set, which made building the sketch a third of a tier file's encoding.
 * Only a filter in front of the set: the items, and so the Bloom filter, are the same.
 */
const seenAsciiTrigrams = new Uint32Array(1 << 16);

/**
 * Adds the trigram hashes of `text.toLowerCase()` without building that string (one more
 * string per query and details value, for nearly all of them the same ASCII text). ASCII text is lower-cased code unit by
 * code unit, which is what toLowerCase does to it; text with any other code unit (whose lower
 * case may differ in length) goes through toLowerCase. Trigrams added before the switch are
 * among the lower-cased text's too, as the ASCII prefix lower-cases the same either way.
 * ASCII trigrams already in {@link seenAsciiTrigrams} are skipped.
 */
function addLowerTextTrigrams(items: ItemSink, text: string): void {
  if (text.length < 3) return;
  let a = text.charCodeAt(0);
  let b = text.charCodeAt(1);
  if ((a | b) >= 0x80) return addTextTrigrams(items, text.toLowerCase());
  a = asciiLower(a);
  b = asciiLower(b);
  const seen = seenAsciiTrigrams;
  for (let i = 2; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0x80) return addTextTrigrams(items, text.toLowerCase());
    c = asciiLower(c);
    const code = (a << 14) | (b << 7) | c;
    const bit = 1 << (code & 31);
    const word = seen[code >>> 5] as number;
    if ((word & bit) === 0) {
      seen[code >>> 5] = word | bit;
      items.add(trigramHash(a, b, c));
    }
    a = b;
    b = c;
  }
}

/** Seeds the step of an item's second Bloom bit (double hashing). */
const BLOOM_STEP_SEED = 0x9747b28c;

/** The Bloom bits of one item's hash (double hashing). */
function bloomBits(hash: number, bits: number, visit: (bit: number) => void): void {
  const step = mix32(hash ^ BLOOM_STEP_SEED) | 1;
  for (let i = 0; i < HASHES_PER_ITEM; i++) visit(((hash + Math.imul(i, step)) >>> 0) % bits);
}

/** What a search asks of a row group's sketch, hashed once per search. */
export interface SketchProbe {
  decision: Decision | '' | undefined;
  action: ActionKind;
  /** Item hashes that must all be in the filter. */
  items: number[];
}

/** The filters a sketch can answer for (a SearchFilter fits). */
export interface SketchFilter {
  user?: string | undefined;
  engine?: string | undefined;
  table?: string | undefined;
  q?: string | undefined;
  decision?: Decision | '' | undefined;
  action: ActionKind;
}

/**
 * The probe of a filter, or undefined when the sketch cannot rule anything out for it (no
 * filter besides time, or only a `q`/`table` shorter than a trigram).
 */
export function sketchProbe(filter: SketchFilter): SketchProbe | undefined {
  const items: number[] = [];
  if (filter.user !== undefined) items.push(userItem(filter.user));
  if (filter.engine !== undefined) items.push(engineItem(filter.engine));
  if (filter.table !== undefined) items.push(...tableItems(filter.table));
  // q is lower-cased by the search parser; a q that is not would match no lower-cased value,
  // and its trigrams then rule out groups just as rightly.
  if (filter.q !== undefined) items.push(...trigramHashes(filter.q));
  if (items.length === 0 && filter.decision === undefined && filter.action === 'all') return undefined;
  return { decision: filter.decision, action: filter.action, items: [...new Set(items)] };
}

/**
 * The distinct values of a row group's short columns, each in order of first appearance (the
 * sketch lists decisions and action kinds in that order). Each is iterated once.
 */
export interface DistinctValues {
  decisions: Iterable<Decision | ''>;
  users: Iterable<string>;
  engines: Iterable<string>;
  actions: Iterable<string>;
  resources: Iterable<string>;
  /** Values of the `tables` column (joined lists; '' for none). */
  tableLists: Iterable<string>;
}

/** What a row group's sketch must admit: its decisions, action kinds and item hashes. */
export interface SketchContent<Items extends ItemSink = Uint32Set> {
  decisions: ReadonlySet<Decision | ''>;
  actions: ReadonlySet<'read' | 'write'>;
  items: Items;
}

/** Where a row group's item hashes go: a set (the writer's), or a check of each against a sketch. */
export interface ItemSink {
  add(item: number): void;
}

/** What a sketch leaves out of a row group: a decision, an action kind, or an item hash. */
export type SketchGap = { decision: Decision | '' } | { action: 'read' | 'write' } | { item: number };

/**
 * The items of a row group: the trigrams of the lower-cased text of every row's query and
 * details (each handed to `add` by `texts`), and, from the distinct short values, each user,
 * each engine (lower-cased), the trigrams of each table name as written, and the lower-cased
 * trigrams of every user, action, resource and table name; with the decisions and action kinds.
 */
export function sketchContent(texts: (add: (text: string) => void) => void, distinct: DistinctValues): SketchContent;
export function sketchContent<Items extends ItemSink>(texts: (add: (text: string) => void) => void, distinct: DistinctValues, items: Items): SketchContent<Items>;
export function sketchContent(texts: (add: (text: string) => void) => void, distinct: DistinctValues, items: ItemSink = new Uint32Set()): SketchContent<ItemSink> {
  const add = (hash: number) => items.add(hash);
  const actions = new Set<'read' | 'write'>();
  // Query and details are mostly distinct: hashed row by row. The short values (users,
  // engines, actions, resources and tables) each once.
  seenAsciiTrigrams.fill(0);
  texts((text) => addLowerTextTrigrams(items, text));
  const short = new Set<string>();
  for (const user of distinct.users) {
    short.add(user);
    items.add(userItem(user));
  }
  for (const engine of distinct.engines) items.add(engineItem(engine));
  for (const action of distinct.actions) {
    actions.add(action === READ_ACTION ? 'read' : 'write');
    short.add(action);
  }
  for (const resource of distinct.resources) short.add(resource);
  // Tables one by one (the column joins them; `q` and `table` match within one name).
  const names = new Set<string>();
  for (const list of distinct.tableLists) if (list !== '') for (const name of splitTables(list)) names.add(name);
  for (const name of names) {
    short.add(name);
    forEachTrigramHash(name, (hash) => items.add(tableTrigram(hash)));
  }
  for (const text of short) forEachTrigramHash(text.toLowerCase(), add);
  return { decisions: new Set(distinct.decisions), actions, items };
}

/** The item of a user id in a sketch. */
export function userItem(user: string): number {
  return stringHash(user, USER_SEED);
}

/** The item of an engine in a sketch (compared case-insensitively). */
export function engineItem(engine: string): number {
  return stringHash(engine.toLowerCase(), ENGINE_SEED);
}

/** The items of a table name in a sketch: its trigrams as written. */
export function tableItems(name: string): number[] {
  return trigramHashes(name).map(tableTrigram);
}

/** One row group's sketch. */
export class RowGroupSketch {
  readonly rows: number;
  readonly decisions: ReadonlySet<Decision | ''>;
  readonly actions: ReadonlySet<'read' | 'write'>;
  readonly bloom: Uint8Array;

  constructor(rows: number, decisions: Iterable<Decision | ''>, actions: Iterable<'read' | 'write'>, bloom: Uint8Array) {
    this.rows = rows;
    this.decisions = new Set(decisions);
    this.actions = new Set(actions);
    this.bloom = bloom;
  }

  /** The sketch of these rows (one row group's). */
  static of(rows: readonly AuditRow[]): RowGroupSketch {
    const distinct = (value: (row: AuditRow) => string) => new Set(rows.map(value));
    return RowGroupSketch.fromDistinct(rows, {
      decisions: new Set(rows.map((row) => row.decision)),
      users: distinct((row) => row.user_id),
      engines: distinct((row) => row.source),
      actions: distinct((row) => row.action),
      resources: distinct((row) => row.resource),
      tableLists: distinct((row) => row.tables),
    });
  }

  /**
   * The sketch of these rows (one row group's), given their distinct short values: the writer
   * finds them anyway while encoding the columns, and collecting them again here in Sets cost
   * a Set insert per row and column. Only `query` and `details` are read from the rows.
   */
  static fromDistinct(rows: readonly AuditRow[], distinct: DistinctValues): RowGroupSketch {
    const content = sketchContent((add) => {
      for (const row of rows) {
        add(row.query);
        add(row.details);
      }
    }, distinct);
    const bits = Math.max(SKETCH_BITS_MIN, Math.ceil((content.items.size * SKETCH_BITS_PER_ITEM) / 64) * 64);
    const bloom = new Uint8Array(bits / 8);
    content.items.forEach((item) => bloomBits(item, bits, (bit) => (bloom[bit >>> 3] = (bloom[bit >>> 3] as number) | (1 << (bit & 7)))));
    return new RowGroupSketch(rows.length, content.decisions, content.actions, bloom);
  }

  /**
   * Whether this sketch admits every value of a row group (its {@link sketchContent}): what a
   * verifier asks of a sketch it did not write. A search skips a row group whose sketch does
   * not pass its probe, so a sketch that leaves out one of the group's decisions, action kinds
   * or items hides the rows that hold it. Undefined when it admits them all, else what it
   * leaves out. Its size may be any: only membership counts.
   */
  missingOf(content: SketchContent<ItemSink>): SketchGap | undefined {
    for (const decision of content.decisions) if (!this.decisions.has(decision)) return { decision };
    for (const action of content.actions) if (!this.actions.has(action)) return { action };
    if (content.items instanceof SketchMembership && content.items.sketch === this) return content.items.missing === undefined ? undefined : { item: content.items.missing };
    let missing: number | undefined;
    const items = content.items as Uint32Set;
    items.forEach((item) => {
      if (missing === undefined && !this.holds(item)) missing = item;
    });
    return missing === undefined ? undefined : { item: missing };
  }

  /** Whether the sketch holds one item hash (all its Bloom bits are set). */
  holds(item: number): boolean {
    // bloomBits without its callback: a verifier asks this for every item of every row group.
    const bloom = this.bloom;
    const bits = bloom.byteLength * 8;
    const step = mix32(item ^ BLOOM_STEP_SEED) | 1;
    for (let i = 0; i < HASHES_PER_ITEM; i++) {
      const bit = ((item + Math.imul(i, step)) >>> 0) % bits;
      if (((bloom[bit >>> 3] as number) & (1 << (bit & 7))) === 0) return false;
    }
    return true;
  }

  /** False when no row of the group can match the probe's filter. */
  mayMatch(probe: SketchProbe): boolean {
    if (probe.decision !== undefined && !this.decisions.has(probe.decision)) return false;
    if (probe.action !== 'all' && !this.actions.has(probe.action)) return false;
    for (const item of probe.items) if (!this.holds(item)) return false;
    return true;
  }
}

/**
 * An {@link ItemSink} that checks each item against a sketch as it comes instead of keeping it:
 * what a verifier passes to {@link sketchContent} (no set of thousands of items built only to be
 * probed afterwards). `missing` is the first item the sketch does not hold.
 */
export class SketchMembership implements ItemSink {
  readonly sketch: RowGroupSketch;
  missing: number | undefined;

  constructor(sketch: RowGroupSketch) {
    this.sketch = sketch;
  }

  add(item: number): void {
    if (this.missing === undefined && !this.sketch.holds(item)) this.missing = item;
  }
}

interface SketchJson {
  version: number;
  groups: Array<{ rows: number; decisions: string[]; actions: string[]; bloom: string }>;
}

/** The footer value holding the sketches of a file's row groups, in order. */
export function encodeRowGroupSketches(sketches: readonly RowGroupSketch[]): string {
  const json: SketchJson = {
    version: ROW_GROUP_SKETCH_VERSION,
    groups: sketches.map((s) => ({ rows: s.rows, decisions: [...s.decisions], actions: [...s.actions], bloom: Buffer.from(s.bloom).toString('base64') })),
  };
  return JSON.stringify(json);
}

const DECISIONS: ReadonlySet<string> = new Set(['ALLOW', 'DENY', '']);
const KINDS: ReadonlySet<string> = new Set(['read', 'write']);

/** Parsed sketches by footer: a cached footer is parsed once. */
const parsed = new WeakMap<ParquetFooter, ReadonlyArray<RowGroupSketch | undefined>>();

/**
 * The sketch of each of the footer's row groups (undefined for a group without one). A file
 * without a sketch, or with one this code cannot trust (unknown version, malformed, row counts
 * that disagree with the footer), has none: it is read in full.
 */
export function rowGroupSketches(footer: ParquetFooter): ReadonlyArray<RowGroupSketch | undefined> {
  let sketches = parsed.get(footer);
  if (sketches === undefined) {
    sketches = parseSketches(footer) ?? footer.row_groups.map(() => undefined);
    parsed.set(footer, sketches);
  }
  return sketches;
}

function parseSketches(footer: ParquetFooter): RowGroupSketch[] | undefined {
  const value = footer.key_value_metadata?.find((kv) => kv.key === ROW_GROUP_SKETCH_KEY)?.value;
  if (value === undefined) return undefined;
  let json: SketchJson;
  try {
    json = JSON.parse(value) as SketchJson;
  } catch {
    return undefined;
  }
  if (json === null || typeof json !== 'object' || json.version !== ROW_GROUP_SKETCH_VERSION || !Array.isArray(json.groups)) return undefined;
  if (json.groups.length !== footer.row_groups.length) return undefined;
  const sketches: RowGroupSketch[] = [];
  for (const [i, group] of json.groups.entries()) {
    if (group === null || typeof group !== 'object' || group.rows !== Number(footer.row_groups[i]?.num_rows)) return undefined;
    if (!Array.isArray(group.decisions) || !group.decisions.every((d) => DECISIONS.has(d))) return undefined;
    if (!Array.isArray(group.actions) || !group.actions.every((a) => KINDS.has(a))) return undefined;
    if (typeof group.bloom !== 'string') return undefined;
    const bloom = new Uint8Array(Buffer.from(group.bloom, 'base64'));
    if (bloom.byteLength === 0 || bloom.byteLength % 8 !== 0) return undefined;
    sketches.push(new RowGroupSketch(group.rows, group.decisions as Array<Decision | ''>, group.actions as Array<'read' | 'write'>, bloom));
  }
  return sketches;
}
