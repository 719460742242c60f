import avsc from 'avsc';

/**
 * Types for decoding Avro that anyone able to write to the bucket may have written. avsc reads
 * as many array items or map entries as a block's count says, whatever bytes are left (reads
 * past the end yield zeros and are noticed only once the value is done), so a count of 2^50 in
 * a 12-byte manifest list held the event loop for good (review: the node stopped answering
 * after its sweep read one such file). Here a count the bytes left cannot hold is refused.
 */

/** avsc's cursor over a buffer (not in its typings). */
interface Tap {
  buf: Buffer;
  pos: number;
  readLong(): number;
  skipLong(): void;
  readString(): string;
  skipString(): void;
}

/** Type internals the bounded types call (avsc's private protocol, not in its typings). */
interface Readable {
  _read(tap: Tap): unknown;
  _skip(tap: Tap): void;
}

/**
 * The item count of the next block at `tap` (0: the collection ends), its byte size skipped
 * where the writer gave one. Each item takes a byte at least ({@link readItem}; `what` names
 * the items): a count above the bytes left is refused.
 */
function nextBlockCount(tap: Tap, what: string): number {
  let n = tap.readLong();
  if (n === 0) return 0;
  if (n < 0) {
    n = -n;
    tap.skipLong();
  }
  const left = tap.buf.length - tap.pos;
  if (n > left) throw new Error(`a block declares ${n} ${what} with ${Math.max(0, left)} bytes left`);
  return n;
}

/** For a skip: the next block's item count as {@link nextBlockCount}, or -1 for a block skipped whole by the byte size it gives. */
function nextSkipCount(tap: Tap, what: string): number {
  const start = tap.pos;
  if (tap.readLong() >= 0) {
    tap.pos = start;
    return nextBlockCount(tap, what);
  }
  const size = tap.readLong();
  // A negative size would step back over bytes already read, and round again for good.
  if (size < 0) throw new Error(`a block gives a negative byte size (${size})`);
  tap.pos += size;
  return -1;
}

/**
 * Reads (or skips) one item, refusing one that took no bytes: items of `null` (or records of
 * nothing but nulls) could be declared by the billion in a few bytes, and no table file has
 * them. So every item takes a byte, which is what bounds a count by the bytes left.
 */
function readItem<T>(tap: Tap, read: () => T, what: string): T {
  const start = tap.pos;
  const value = read();
  if (tap.pos === start) throw new Error(`${what} that take no bytes`);
  return value;
}

class BoundedArrayType extends avsc.types.ArrayType {
  _read(tap: Tap): unknown[] {
    // `itemsType` is a resolver's when reading through one (avsc calls this with `this` the resolver).
    const items = this.itemsType as unknown as Readable;
    const values: unknown[] = [];
    for (let n = nextBlockCount(tap, 'array items'); n > 0; n = nextBlockCount(tap, 'array items')) {
      for (let i = 0; i < n; i++) values.push(readItem(tap, () => items._read(tap), 'array items'));
    }
    return values;
  }

  _skip(tap: Tap): void {
    const items = this.itemsType as unknown as Readable;
    for (let n = nextSkipCount(tap, 'array items'); n !== 0; n = nextSkipCount(tap, 'array items')) {
      for (let i = 0; i < n; i++) readItem(tap, () => items._skip(tap), 'array items');
    }
  }
}

/** Each map entry's key takes a byte at least, so a map's counts are always bounded by its bytes. */
class BoundedMapType extends avsc.types.MapType {
  _read(tap: Tap): Record<string, unknown> {
    const values = this.valuesType as unknown as Readable;
    const map: Record<string, unknown> = {};
    for (let n = nextBlockCount(tap, 'map entries'); n > 0; n = nextBlockCount(tap, 'map entries')) {
      for (let i = 0; i < n; i++) {
        const key = tap.readString();
        // Defined, not assigned: a key `__proto__` is data, not the map's prototype.
        Object.defineProperty(map, key, { value: values._read(tap), enumerable: true, writable: true, configurable: true });
      }
    }
    return map;
  }

  _skip(tap: Tap): void {
    const values = this.valuesType as unknown as Readable;
    for (let n = nextSkipCount(tap, 'map entries'); n !== 0; n = nextSkipCount(tap, 'map entries')) {
      for (let i = 0; i < n; i++) {
        tap.skipString();
        values._skip(tap);
      }
    }
  }
}

function boundedCollection(schema: avsc.Schema, opts: avsc.ForSchemaOptions): avsc.Type | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
  const type = (schema as { type?: unknown }).type;
  if (type === 'array') return new BoundedArrayType(schema, opts);
  if (type === 'map') return new BoundedMapType(schema, opts);
  return undefined;
}

/**
 * Most reads one value of a file's schema may make without any of them being an array item or map
 * entry (each of which takes a byte): a manifest entry makes 39 and a manifest list's row 18, two
 * more per partition field. Records nest without taking bytes of their own, so a writer schema of
 * records of ten records of … of ten `null`s made one value cost 10^11 reads in a 4 KB file
 * (second review: 15 s at ten levels, ten times more a level). With this bound a file costs at
 * most about a thousand reads per byte.
 */
export const AVRO_READS_PER_VALUE_MAX = 1_000;

/** avsc's compiled types as far as this walk needs them (their classes are not all in its typings). */
interface TypeShape {
  fields?: ReadonlyArray<{ type: avsc.Type }>;
  types?: readonly avsc.Type[];
  itemsType?: avsc.Type;
  valuesType?: avsc.Type;
  underlyingType?: avsc.Type;
}

/**
 * The most reads a value of `type` makes between two array items or map entries (its own read,
 * a record's fields', a union's costliest branch), and the same for every array's items and map's
 * values inside it: the larger of all of them. A named type met again inside itself counts one
 * (recursion passes through a union, an array or a map, each of which takes a byte).
 */
export function readsPerValueMax(type: avsc.Type): number {
  const done = new Map<avsc.Type, number>();
  const inProgress = new Set<avsc.Type>();
  let itemsMax = 0;
  const reads = (t: avsc.Type): number => {
    const known = done.get(t);
    if (known !== undefined) return known;
    if (inProgress.has(t)) return 1;
    inProgress.add(t);
    const shape = t as unknown as TypeShape;
    let total = 1;
    if (shape.underlyingType !== undefined) total = reads(shape.underlyingType);
    else if (shape.fields !== undefined) for (const field of shape.fields) total = Math.min(Number.MAX_SAFE_INTEGER, total + reads(field.type));
    else if (shape.types !== undefined) total = 1 + Math.max(0, ...shape.types.map(reads));
    else if (shape.itemsType !== undefined) itemsMax = Math.max(itemsMax, reads(shape.itemsType));
    else if (shape.valuesType !== undefined) itemsMax = Math.max(itemsMax, reads(shape.valuesType));
    inProgress.delete(t);
    done.set(t, total);
    return total;
  };
  return Math.max(reads(type), itemsMax);
}

/**
 * avsc.Type.forSchema with arrays and maps that refuse a count their bytes cannot hold (they
 * throw; decoding fails with that message). Every type that decodes a file is built this way:
 * the reader types, a file's writer schema, the container header.
 */
export function boundedType(schema: avsc.Schema): avsc.Type {
  return avsc.Type.forSchema(schema, { typeHook: boundedCollection });
}
