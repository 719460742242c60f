import { AuditError, AuditErrorCode } from '@auditlake/model';
import avsc from 'avsc';
import { inflateRawSync } from 'node:zlib';
import { AVRO_READS_PER_VALUE_MAX, boundedType, readsPerValueMax } from './bounded-avro-types.js';
import { runToEnd, type Steps } from './event-loop-slices.js';

/**
 * Avro object container files (Avro spec "Object Container Files"; docs/iceberg-layout.md
 * §3), built synchronously over avsc's binary encodings: avsc's own container encoder is a
 * stream, and re-serializes the schema without Iceberg's `field-id` attributes when given a
 * compiled type.
 */

/** `Obj` followed by version 1. */
const MAGIC = Uint8Array.of(0x4f, 0x62, 0x6a, 0x01);

/** Length of the sync marker that ends the header and every block. */
export const SYNC_MARKER_BYTES = 16;

/**
 * Serialized records per block before a new block starts. Java and avsc use the same 64 KiB
 * default; a manifest of ours is a few KB, so it is normally one block.
 */
export const AVRO_BLOCK_BYTES_TARGET = 64 * 1024;

/**
 * Largest inflated `deflate` block accepted when decoding (files written by Java use deflate).
 * Java's blocks are ~64 KiB; this only stops a corrupt or hostile file from exhausting memory.
 */
export const AVRO_BLOCK_INFLATED_BYTES_MAX = 64 * 1024 * 1024;

/**
 * Most block bytes (inflated) and records one file may hold. The per-block bound alone let a file
 * of many deflate blocks, each ~64 KiB on the wire, inflate to 64 MiB apiece and decode them all
 * into records held at once: a bucket writer's few-MB manifest exhausted a node's memory. An
 * Iceberg manifest is ~8 MB (Java's target) holding some tens of thousands of entries, a
 * manifest list one entry per manifest; both bounds leave ample room for them.
 */
export const AVRO_FILE_INFLATED_BYTES_MAX = 256 * 1024 * 1024;
export const AVRO_FILE_RECORDS_MAX = 1_000_000;

const HEADER_TYPE = boundedType({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: SYNC_MARKER_BYTES } },
  ],
});

const LONG_TYPE = avsc.Type.forSchema('long');

/** A record schema together with its compiled avsc type. */
export interface AvroRecordSchema {
  /** The writer schema exactly as it goes into `avro.schema` (field ids and all). */
  readonly json: Readonly<Record<string, unknown>>;
  readonly type: avsc.Type;
}

/** Compiles a schema JSON object; unregistered logical types (`date`, `map`) keep their base type. */
export function avroRecordSchema(json: Readonly<Record<string, unknown>>): AvroRecordSchema {
  return { json, type: boundedType(json as avsc.Schema) };
}

/** What {@link encodeAvroContainer} writes. */
export interface AvroContainerInput {
  schema: AvroRecordSchema;
  records: readonly unknown[];
  /** Header key-values besides `avro.schema`/`avro.codec`, written as UTF-8. */
  metadata: Readonly<Record<string, string>>;
  /** The 16-byte sync marker; random when absent (tests pass one to get identical bytes). */
  syncMarker?: Uint8Array;
}

/**
 * Encodes records as an object container file with codec `null` (icebird cannot inflate some
 * small or stored deflate blocks, docs/iceberg-layout.md §3). The header holds `avro.schema` (the schema JSON
 * as given), `avro.codec` and the caller's keys. Throws TypeError for a record the schema does
 * not accept (naming the offending field) or a bad sync marker.
 */
export function encodeAvroContainer(input: AvroContainerInput): Uint8Array {
  return runToEnd(avroContainerEncoding(input));
}

/**
 * {@link encodeAvroContainer} as steps of one block each (~64 KiB), for a caller that gives the
 * event loop turns between them ({@link runInSlices}). `records` is read as it is iterated:
 * a caller may map its values to Avro records lazily, so no step converts them all at once.
 */
export function* avroContainerEncoding(input: Omit<AvroContainerInput, 'records'> & { records: Iterable<unknown> }): Steps<Uint8Array> {
  const syncMarker = input.syncMarker ?? globalThis.crypto.getRandomValues(new Uint8Array(SYNC_MARKER_BYTES));
  if (syncMarker.byteLength !== SYNC_MARKER_BYTES) {
    throw new TypeError(`syncMarker must be ${SYNC_MARKER_BYTES} bytes, got ${syncMarker.byteLength}`);
  }
  const meta: Record<string, Buffer> = {};
  for (const [key, value] of Object.entries(input.metadata)) {
    if (key.startsWith('avro.')) throw new TypeError(`header key ${key} is reserved for Avro`);
    meta[key] = Buffer.from(value, 'utf8');
  }
  meta['avro.schema'] = Buffer.from(JSON.stringify(input.schema.json), 'utf8');
  meta['avro.codec'] = Buffer.from('null', 'utf8');

  const parts: Uint8Array[] = [
    HEADER_TYPE.toBuffer({ magic: Buffer.from(MAGIC), meta, sync: Buffer.from(syncMarker) }),
  ];
  let block: Buffer[] = [];
  let blockBytes = 0;
  const flush = (): void => {
    if (block.length === 0) return;
    parts.push(LONG_TYPE.toBuffer(block.length), LONG_TYPE.toBuffer(blockBytes), ...block, syncMarker);
    block = [];
    blockBytes = 0;
  };
  for (const record of input.records) {
    const encoded = encodeRecord(input.schema.type, record);
    block.push(encoded);
    blockBytes += encoded.byteLength;
    if (blockBytes >= AVRO_BLOCK_BYTES_TARGET) {
      flush();
      yield;
    }
  }
  flush();
  return concat(parts);
}

function encodeRecord(type: avsc.Type, record: unknown): Buffer {
  const problems: string[] = [];
  const valid = type.isValid(record, {
    errorHook: (path: string[], value: unknown) => {
      problems.push(`${path.join('.') || '(record)'} = ${describe(value)}`);
    },
  });
  if (!valid) throw new TypeError(`record does not match Avro schema ${type.name ?? ''}: ${problems.join('; ')}`);
  return type.toBuffer(record);
}

function describe(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (value instanceof Uint8Array) return `Uint8Array(${value.byteLength})`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Writer schemas whose resolver is kept per reader type (a table's files share a handful). */
const RESOLVERS_PER_READER_MAX = 32;

interface KnownWriter {
  writerSchema: unknown;
  resolver: avsc.Resolver;
  /** See {@link OpenedAvroContainer.writerIsReader}. */
  writerIsReader: boolean;
}

const resolvers = new WeakMap<avsc.Type, Map<string, KnownWriter>>();

/**
 * The resolver from the writer schema `schemaText` to `readerType`. Building the writer's type
 * and the resolver costs more than decoding a manifest of ours, and every manifest and list of
 * a table carries the same few schemas: each is built once per reader type and kept (at most
 * RESOLVERS_PER_READER_MAX; the oldest goes first). The writer schema object is shared: callers
 * only read it.
 */
function resolverFor(readerType: avsc.Type, schemaText: string, unusable: Unusable): KnownWriter {
  let known = resolvers.get(readerType);
  if (known === undefined) {
    known = new Map();
    resolvers.set(readerType, known);
  }
  const cached = known.get(schemaText);
  if (cached !== undefined) return cached;
  const writerSchema = attempt(() => JSON.parse(schemaText) as unknown, unusable, 'avro.schema is not JSON');
  const writerType = attempt(() => boundedType(writerSchema as avsc.Schema), unusable, 'bad writer schema');
  const reads = readsPerValueMax(writerType);
  if (reads > AVRO_READS_PER_VALUE_MAX) throw unusable(`its schema makes ${reads} reads of one value without taking a byte, more than the ${AVRO_READS_PER_VALUE_MAX} allowed`);
  const resolver = attempt(() => readerType.createResolver(writerType), unusable, 'writer schema does not resolve to the reader schema');
  if (known.size >= RESOLVERS_PER_READER_MAX) known.delete(known.keys().next().value as string);
  const writer = { writerSchema, resolver, writerIsReader: canonicalForm(writerType) === canonicalForm(readerType) };
  known.set(schemaText, writer);
  return writer;
}

/**
 * The type's Parsing Canonical Form (Avro spec): names, types and field order, without
 * attributes (`field-id`, `logicalType`, defaults, docs). Two schemas with the same form encode
 * a value in the same bytes.
 */
function canonicalForm(type: avsc.Type): string {
  return JSON.stringify(type.schema());
}

/** A decoded container file. */
export interface AvroContainer {
  /** Header keys other than `avro.*`, decoded as UTF-8. */
  metadata: Record<string, string>;
  /** The writer schema from `avro.schema`. */
  writerSchema: unknown;
  /** Records, resolved from the writer schema to the reader type. */
  records: unknown[];
}

/** Makes the coded error a container's problems are reported with. */
export type Unusable = (message: string, cause?: unknown) => AuditError;

/** One block of a container file: its declared record count and its (inflated) bytes. */
export interface AvroBlock {
  count: number;
  data: Buffer;
}

/** A container file whose header is read and checked; its blocks are read as they are asked for. */
export interface OpenedAvroContainer {
  /** Header keys other than `avro.*`, decoded as UTF-8. */
  metadata: Record<string, string>;
  /** The writer schema from `avro.schema`. */
  writerSchema: unknown;
  /** Resolves a record of the writer schema to the reader type. */
  resolver: avsc.Resolver;
  /**
   * The writer schema is the reader type in Parsing Canonical Form: a record's bytes are laid
   * out exactly as the reader type describes, field for field, so a reader written for that
   * type may read them without resolution.
   */
  writerIsReader: boolean;
  /** The coded error for this file (`<what> is not readable: …`). */
  unusable: Unusable;
  /**
   * The blocks in file order, each checked before it is handed out: sync marker, its count
   * against its bytes, and the file's bounds on records and inflated bytes so far.
   */
  blocks(): Generator<AvroBlock, void, void>;
}

/**
 * Reads an object container file's header and resolves its writer schema to `readerType`.
 * Throws AuditError AUDIT_TABLE_INVALID for anything that is not such a file (codecs `null`
 * and `deflate`) or whose schema cannot be resolved; `what` names the file kind in messages.
 */
export function openAvroContainer(bytes: Uint8Array, readerType: avsc.Type, what: string): OpenedAvroContainer {
  const unusable: Unusable = (message, cause) =>
    new AuditError(AuditErrorCode.TABLE_INVALID, `${what} is not readable: ${message}`, cause === undefined ? {} : { cause });
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.byteLength < MAGIC.byteLength || !buffer.subarray(0, MAGIC.byteLength).equals(MAGIC)) {
    throw unusable('no Avro magic bytes');
  }
  const header = attempt<{ value: { meta: Record<string, Buffer>; sync: Buffer } | undefined; offset: number }>(
    () => HEADER_TYPE.decode(buffer, 0),
    unusable,
    'bad header',
  );
  if (header.value === undefined || header.offset < 0) throw unusable('truncated header');
  const meta = header.value.meta;
  const codec = meta['avro.codec']?.toString('utf8') ?? 'null';
  if (codec !== 'null' && codec !== 'deflate') throw unusable(`unsupported codec ${codec}`);
  const schemaText = meta['avro.schema']?.toString('utf8');
  if (schemaText === undefined) throw unusable('no avro.schema in the header');
  const { writerSchema, resolver, writerIsReader } = resolverFor(readerType, schemaText, unusable);

  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(meta)) {
    if (!key.startsWith('avro.')) metadata[key] = value.toString('utf8');
  }
  const layout = { buffer, start: header.offset, syncMarker: header.value.sync, deflated: codec === 'deflate' };
  return { metadata, writerSchema, resolver, writerIsReader, unusable, blocks: () => containerBlocks(layout, unusable) };
}

/** Where a container's blocks are: after the header, each ending in the sync marker. */
interface BlocksLayout {
  buffer: Buffer;
  start: number;
  syncMarker: Buffer;
  deflated: boolean;
}

function* containerBlocks(layout: BlocksLayout, unusable: Unusable): Generator<AvroBlock, void, void> {
  const { buffer, syncMarker } = layout;
  let offset = layout.start;
  let blockBytes = 0;
  let records = 0;
  while (offset < buffer.byteLength) {
    const count = readLong(buffer, offset, unusable);
    const size = readLong(buffer, count.offset, unusable);
    if (count.value < 0 || size.value < 0) throw unusable('negative block count or size');
    const dataEnd = size.offset + size.value;
    if (dataEnd + SYNC_MARKER_BYTES > buffer.byteLength) throw unusable('truncated block');
    if (!buffer.subarray(dataEnd, dataEnd + SYNC_MARKER_BYTES).equals(syncMarker)) throw unusable('sync marker mismatch');
    let data = buffer.subarray(size.offset, dataEnd);
    if (layout.deflated) data = inflateBlock(data, AVRO_FILE_INFLATED_BYTES_MAX - blockBytes, unusable);
    blockBytes += data.byteLength;
    if (blockBytes > AVRO_FILE_INFLATED_BYTES_MAX) throw unusable(`its blocks hold more than the ${AVRO_FILE_INFLATED_BYTES_MAX} bytes one file may hold`);
    // Every record of a table's files takes a byte at least: a count beyond the block's bytes
    // is not a count of records (decoding it would only find out record by record).
    if (count.value > data.byteLength) throw unusable(`a block of ${data.byteLength} bytes declares ${count.value} records`);
    records += count.value;
    if (records > AVRO_FILE_RECORDS_MAX) throw unusable(`its blocks declare more than the ${AVRO_FILE_RECORDS_MAX} records one file may hold`);
    yield { count: count.value, data };
    offset = dataEnd + SYNC_MARKER_BYTES;
  }
}

/**
 * Decodes an object container file, resolving each record from the file's writer schema to
 * `readerType` (Avro schema resolution: fields missing from the writer take the reader's
 * defaults, fields unknown to the reader are skipped). Codecs `null` and `deflate`.
 * Throws AuditError AUDIT_TABLE_INVALID for anything that is not such a file or whose
 * schema cannot be resolved; `what` names the file kind in messages.
 */
export function decodeAvroContainer(bytes: Uint8Array, readerType: avsc.Type, what: string): AvroContainer {
  const container = openAvroContainer(bytes, readerType, what);
  const records: unknown[] = [];
  for (const block of container.blocks()) for (const record of decodeBlockRecords(block, readerType, container)) records.push(record);
  return { metadata: container.metadata, writerSchema: container.writerSchema, records };
}

/** A block's records, decoded by avsc through the container's resolver. */
export function decodeBlockRecords({ count, data }: AvroBlock, readerType: avsc.Type, container: OpenedAvroContainer): unknown[] {
  const { resolver, unusable } = container;
  const into: unknown[] = [];
  let position = 0;
  for (let i = 0; i < count; i++) {
    const decoded = attempt(() => readerType.decode(data, position, resolver), unusable, 'bad record');
    if (decoded.offset < 0) throw unusable('block shorter than its records');
    // So that each record takes a byte, as the block's count check assumes.
    if (decoded.offset === position) throw unusable('its records take no bytes');
    into.push(decoded.value);
    position = decoded.offset;
  }
  if (position !== data.byteLength) throw unusable('block longer than its records');
  return into;
}

/** A deflate block inflated, refused when it inflates beyond a block's bound or the `fileRoom` bytes its file has left. */
function inflateBlock(data: Buffer, fileRoom: number, unusable: Unusable): Buffer {
  const room = Math.min(AVRO_BLOCK_INFLATED_BYTES_MAX, fileRoom);
  try {
    return inflateRawSync(data, { maxOutputLength: Math.max(1, room) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw unusable(room < AVRO_BLOCK_INFLATED_BYTES_MAX ? `its blocks inflate beyond the ${AVRO_FILE_INFLATED_BYTES_MAX} bytes one file may hold` : `a deflate block inflates beyond ${AVRO_BLOCK_INFLATED_BYTES_MAX} bytes`, err);
    }
    throw unusable(`bad deflate block: ${err instanceof Error ? err.message : String(err)}`, err);
  }
}

function readLong(buffer: Buffer, offset: number, unusable: Unusable): { value: number; offset: number } {
  const decoded = attempt<{ value: number | undefined; offset: number }>(() => LONG_TYPE.decode(buffer, offset), unusable, 'bad block header');
  if (decoded.value === undefined || decoded.offset < 0) throw unusable('truncated block header');
  return { value: decoded.value, offset: decoded.offset };
}

/** Runs `fn`, turning any error into the coded one. */
function attempt<T>(fn: () => T, unusable: Unusable, message: string): T {
  try {
    return fn();
  } catch (err) {
    throw unusable(`${message}: ${err instanceof Error ? err.message : String(err)}`, err);
  }
}

/** Avro `bytes` values are Buffers in avsc: a view of `bytes`, not a copy. */
export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A plain Uint8Array copy of decoded bytes, so callers never keep a whole file's buffer alive. */
export function fromBuffer(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const total = parts.reduce((sum, part) => sum + part.byteLength, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
