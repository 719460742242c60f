import { AuditError, AuditErrorCode, forEachTrigramHash, READ_ACTION, type Decision } from '@auditlake/model';
import type { SchemaElement } from 'hyparquet';
import { hashParquetValue, readBloomFilter, sbbfContains } from 'hyparquet/src/bloom.js';
import { readColumnIndex, readOffsetIndex } from 'hyparquet/src/indexes.js';
import type { ByteSource } from './byte-source.js';
import { splitTables } from './audit-columns.js';
import { compareCodePoints } from './iceberg-bounds.js';
import type { ParquetFooter } from './parquet-reader.js';
import { engineItem, rowGroupSketches, sketchContent, SketchMembership, tableItems, userItem, type RowGroupSketch, type SketchGap } from './row-group-sketch.js';

/**
 * What a tiered file's footer declares of each row group, checked against the group's rows:
 *
 * - each column chunk's statistics — its least and greatest value must bound every value of the
 *   chunk, and its null count, where given, must be the number of nulls. Readers skip a row
 *   group whose statistics exclude what they look for (ours by `ts`, Trino, Spark and DuckDB by
 *   any column: `user_id = 'x'`, `decision = 'DENY'`, `x IS NULL`);
 * - the row-group sketch (row-group-sketch.ts), where the file has one this code knows: it must
 *   admit every row's decision, action kind, user, engine, table names and text, since our
 *   search skips a group whose sketch rules its filter out.
 *
 * The record chain covers the rows, not these declarations. A footer rewritten with a narrower
 * bound, or a sketch left without one user, hides rows from every search that skips row groups
 * by it while each record still verifies: exactly what someone erasing their own trail from an
 * investigator's searches would do. Throws AUDIT_INTEGRITY_MISMATCH naming the row group, the
 * column (or what the sketch leaves out) and a row that is hidden.
 *
 * `values` are the decoded columns of the whole file by column name (strings as text, INT64 as
 * bigint, null where a row has none); the footer must have been read with exact statistics, so
 * string bounds are their stored bytes.
 */
export function checkRowGroupDeclarations(footer: ParquetFooter, values: ReadonlyMap<string, readonly unknown[]>): void {
  const rowName = rowNamer(values);
  const sketches = rowGroupSketches(footer);
  let start = 0;
  footer.row_groups.forEach((group, index) => {
    const end = start + Number(group.num_rows);
    for (const chunk of group.columns) {
      const meta = chunk.meta_data;
      const name = meta?.path_in_schema[0];
      const column = name === undefined ? undefined : values.get(name);
      if (meta === undefined || meta.statistics === undefined || column === undefined || meta.path_in_schema.length !== 1) continue;
      const hidden = statisticsMiss(meta.statistics, column, start, end);
      if (hidden !== undefined) throw altered(index, `column ${name}: its statistics declare ${hidden.why}; ${rowName(hidden.row)} is outside it`, 'statistics');
    }
    const sketch = sketches[index];
    if (sketch !== undefined) {
      const gap = sketchGap(sketch, values, start, end);
      if (gap !== undefined) throw altered(index, `its row-group sketch leaves out ${gap.what}, which ${rowName(gap.row)} holds`, 'sketch');
    }
    start = end;
  });
}

/** How a message names row `i` of the file: by its seq, where it has one. */
function rowNamer(values: ReadonlyMap<string, readonly unknown[]>): (i: number) => string {
  const seqs = values.get('seq');
  return (i) => {
    const seq = seqs?.[i];
    return typeof seq === 'bigint' || typeof seq === 'number' ? `the row with seq ${seq}` : `row ${i}`;
  };
}

const SKIPPED_BY = { statistics: 'footer statistics', sketch: 'sketch', bloom: 'Bloom filters', pages: 'page indexes' } as const;

function altered(group: number, detail: string, what: keyof typeof SKIPPED_BY): AuditError {
  return new AuditError(
    AuditErrorCode.INTEGRITY_MISMATCH,
    `row group ${group}: ${detail}: a search that skips ${what === 'pages' ? 'pages' : 'row groups'} by their ${SKIPPED_BY[what]} would miss it; the file's ${what === 'bloom' ? 'Bloom filter' : what === 'pages' ? 'column index' : 'footer'} was altered`,
  );
}

/**
 * What a file declares of its rows outside the footer, checked against them like
 * {@link checkRowGroupDeclarations}:
 *
 * - every Parquet Bloom filter (ours has one on `user_id`: Trino, Spark and DuckDB skip a row
 *   group whose filter lacks the value of an `=` or `IN` predicate) must hold every distinct
 *   value of its column chunk. A filter in a form this code cannot read (another algorithm,
 *   hash or compression, no recorded length) or on a column whose values cannot be hashed as
 *   stored (hashParquetValue) is not checked;
 * - every column index (per page: least and greatest value, null count, whether all null; the
 *   same engines skip pages by it), with the offset index saying which rows each page holds,
 *   must bound the page's values as a chunk's statistics must bound the chunk's.
 *
 * Throws AUDIT_INTEGRITY_MISMATCH naming the row group, the column (and page), what is left out
 * and a row holding it.
 */
export async function checkFileIndexes(source: ByteSource, footer: ParquetFooter, values: ReadonlyMap<string, readonly unknown[]>): Promise<void> {
  const rowName = rowNamer(values);
  const bytesAt = async (offset: bigint | number, length: number) => {
    const from = Number(offset);
    return { view: new DataView(await source.slice(from, from + length)), offset: 0 };
  };
  let start = 0;
  for (const [index, group] of footer.row_groups.entries()) {
    const end = start + Number(group.num_rows);
    for (const chunk of group.columns) {
      const meta = chunk.meta_data;
      const name = meta?.path_in_schema[0];
      const column = name === undefined ? undefined : values.get(name);
      const element = footer.schema.find((e: SchemaElement) => e.name === name && e.num_children === undefined);
      if (meta === undefined || column === undefined || element === undefined || meta.path_in_schema.length !== 1) continue;
      if (meta.bloom_filter_offset !== undefined && meta.bloom_filter_length !== undefined) {
        const filter = readBloomFilter(await bytesAt(meta.bloom_filter_offset, meta.bloom_filter_length));
        const missing = filter === undefined ? undefined : bloomMiss(filter.blocks, element, column, start, end);
        if (missing !== undefined) throw altered(index, `column ${name}: its Bloom filter leaves out ${shown(column[missing])}, which ${rowName(missing)} holds`, 'bloom');
      }
      if (chunk.column_index_offset !== undefined && chunk.column_index_length !== undefined && chunk.offset_index_offset !== undefined && chunk.offset_index_length !== undefined) {
        const pages = readColumnIndex(await bytesAt(chunk.column_index_offset, chunk.column_index_length), element, EXACT_PARSERS);
        const locations = readOffsetIndex(await bytesAt(chunk.offset_index_offset, chunk.offset_index_length)).page_locations;
        for (const [page, location] of locations.entries()) {
          const from = start + Number(location.first_row_index);
          const to = page + 1 < locations.length ? start + Number(locations[page + 1]?.first_row_index) : end;
          const allNull = pages.null_pages[page] === true;
          const declared: Statistics = {
            ...(pages.null_counts?.[page] !== undefined ? { null_count: pages.null_counts[page] } : allNull ? { null_count: to - from } : {}),
            ...(allNull ? {} : { min_value: pages.min_values[page], max_value: pages.max_values[page] }),
          };
          const hidden = statisticsMiss(declared, column, from, to);
          if (hidden !== undefined) throw altered(index, `column ${name}, page ${page}: its column index declares ${hidden.why}; ${rowName(hidden.row)} is outside it`, 'pages');
        }
      }
    }
    start = end;
  }
}

/** Column index values as stored: strings as their bytes, timestamps as their bigint. */
const EXACT_PARSERS = { stringFromBytes: (bytes: Uint8Array): Uint8Array => bytes, timestampFromMicroseconds: (micros: bigint): bigint => micros } as unknown as Parameters<typeof readColumnIndex>[2];

/** The first row of [start, end) whose value the Bloom filter does not hold. */
function bloomMiss(blocks: Uint32Array, element: SchemaElement, column: readonly unknown[], start: number, end: number): number | undefined {
  const seen = new Set<unknown>();
  for (let i = start; i < end; i++) {
    const value = column[i];
    if (value === null || value === undefined || seen.has(value)) continue;
    seen.add(value);
    const hash = hashParquetValue(value, element);
    if (hash !== undefined && !sbbfContains(blocks, hash)) return i;
  }
  return undefined;
}

interface Statistics {
  min_value?: unknown;
  max_value?: unknown;
  min?: unknown;
  max?: unknown;
  null_count?: bigint | number;
}

/** The first row of [start, end) that the chunk's statistics exclude, with what they declare. */
function statisticsMiss(statistics: Statistics, column: readonly unknown[], start: number, end: number): { row: number; why: string } | undefined {
  if (statistics.null_count !== undefined) {
    let nulls = 0;
    let firstNull = -1;
    let firstValue = -1;
    for (let i = start; i < end; i++) {
      if (column[i] === null || column[i] === undefined) {
        nulls++;
        if (firstNull < 0) firstNull = i;
      } else if (firstValue < 0) firstValue = i;
    }
    const declared = Number(statistics.null_count);
    if (declared !== nulls) {
      const row = nulls > declared ? firstNull : firstValue;
      return { row: row < 0 ? start : row, why: `${declared} nulls, it holds ${nulls}` };
    }
  }
  // min_value/max_value are what readers use; min/max are the deprecated fields, kept by a
  // reader for numbers (signed order, the same) and ignored for strings (undefined order).
  const min = statistics.min_value ?? (statistics.min instanceof Uint8Array ? undefined : statistics.min);
  const max = statistics.max_value ?? (statistics.max instanceof Uint8Array ? undefined : statistics.max);
  if (min !== undefined) {
    const row = firstBelow(column, start, end, min, 1);
    if (row !== undefined) return { row, why: `a least value of ${shown(min)}` };
  }
  if (max !== undefined) {
    const row = firstBelow(column, start, end, max, -1);
    if (row !== undefined) return { row, why: `a greatest value of ${shown(max)}` };
  }
  return undefined;
}

const utf8 = new TextDecoder();

/** Any UTF-16 code unit from U+D800 up (surrogates, U+E000–U+FFFF). */
const ABOVE_D7FF = /[\uD800-\uFFFF]/;

/**
 * The first row whose value lies below `bound` (`sign` 1: a lower bound) or above it (`sign`
 * -1: an upper bound). Values of another type than the bound (a nested column) are not compared.
 */
function firstBelow(column: readonly unknown[], start: number, end: number, bound: unknown, sign: 1 | -1): number | undefined {
  if (typeof bound === 'bigint' || typeof bound === 'number') {
    for (let i = start; i < end; i++) {
      const value = column[i];
      if ((typeof value === 'bigint' || typeof value === 'number') && sign * (value > bound ? 1 : value < bound ? -1 : 0) < 0) return i;
    }
    return undefined;
  }
  if (!(bound instanceof Uint8Array)) return undefined;
  const text = utf8.decode(bound);
  // JS compares strings by UTF-16 code unit, which is code point order (UTF-8 byte order)
  // except where one string has a surrogate and the other U+E000–U+FFFF at the first
  // difference. A bound with no code unit from U+D800 up cannot be either there, so against
  // such a bound (nearly every one) the native comparison is exact, and much cheaper.
  const native = !ABOVE_D7FF.test(text);
  for (let i = start; i < end; i++) {
    const value = column[i];
    if (typeof value !== 'string') continue;
    const outside = native ? (sign > 0 ? value < text : value > text) : sign * compareCodePoints(value, text) < 0;
    // A value that seems out of bounds is compared byte for byte: a bound cut inside a
    // character decodes inexactly.
    if (outside && sign * Buffer.compare(Buffer.from(value, 'utf8'), bound) < 0) return i;
  }
  return undefined;
}

function shown(value: unknown): string {
  if (value instanceof Uint8Array) return JSON.stringify(utf8.decode(value));
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function textsOf(values: ReadonlyMap<string, readonly unknown[]>, name: string): readonly unknown[] {
  return values.get(name) ?? [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** What the group's sketch leaves out, and a row that holds it; undefined when it admits all. */
function sketchGap(sketch: RowGroupSketch, values: ReadonlyMap<string, readonly unknown[]>, start: number, end: number): { what: string; row: number } | undefined {
  const [query, details, users, engines, actions, resources, tables, decisions] = ['query', 'details', 'user_id', 'source', 'action', 'resource', 'tables', 'decision'].map((name) => textsOf(values, name)) as [
    readonly unknown[],
    readonly unknown[],
    readonly unknown[],
    readonly unknown[],
    readonly unknown[],
    readonly unknown[],
    readonly unknown[],
    readonly unknown[],
  ];
  const distinct = (column: readonly unknown[]) => {
    const set = new Set<string>();
    for (let i = start; i < end; i++) set.add(text(column[i]));
    return set;
  };
  const content = sketchContent(
    (add) => {
      for (let i = start; i < end; i++) {
        add(text(query[i]));
        add(text(details[i]));
      }
    },
    {
      decisions: distinct(decisions) as Set<Decision | ''>,
      users: distinct(users),
      engines: distinct(engines),
      actions: distinct(actions),
      resources: distinct(resources),
      tableLists: distinct(tables),
    },
    new SketchMembership(sketch),
  );
  const gap = sketch.missingOf(content);
  if (gap === undefined) return undefined;
  return { what: describeGap(gap), row: rowHolding(gap, sketch, { query, details, users, engines, actions, resources, tables, decisions }, start, end) };
}

function describeGap(gap: SketchGap): string {
  if ('decision' in gap) return `the decision ${JSON.stringify(gap.decision)}`;
  if ('action' in gap) return `the ${gap.action} actions`;
  return 'a value';
}

/** The first row of the group that the sketch does not admit (found only once a gap is known). */
function rowHolding(
  gap: SketchGap,
  sketch: RowGroupSketch,
  columns: Record<'query' | 'details' | 'users' | 'engines' | 'actions' | 'resources' | 'tables' | 'decisions', readonly unknown[]>,
  start: number,
  end: number,
): number {
  for (let i = start; i < end; i++) {
    if ('decision' in gap) {
      if (text(columns.decisions[i]) === gap.decision) return i;
      continue;
    }
    if ('action' in gap) {
      if ((text(columns.actions[i]) === READ_ACTION) === (gap.action === 'read')) return i;
      continue;
    }
    if (!sketch.holds(userItem(text(columns.users[i]))) || !sketch.holds(engineItem(text(columns.engines[i])))) return i;
    const names = text(columns.tables[i]) === '' ? [] : splitTables(text(columns.tables[i]));
    if (names.some((name) => tableItems(name).some((item) => !sketch.holds(item)))) return i;
    let missing = false;
    for (const value of [columns.query[i], columns.details[i], columns.users[i], columns.actions[i], columns.resources[i], ...names]) {
      forEachTrigramHash(text(value).toLowerCase(), (hash) => {
        if (!sketch.holds(hash)) missing = true;
      });
    }
    if (missing) return i;
  }
  return start;
}
