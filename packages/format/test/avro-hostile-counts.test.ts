// Goal: an Avro file whose counts its bytes cannot hold — a header map, an array or map inside a record (read or skipped by schema resolution), a block of records, items or records that take no bytes, a negative block size — is refused at once with AUDIT_TABLE_INVALID naming the count, never decoded count by count (a 12-byte manifest list declaring 2^50 header entries held a node's event loop for good); files a writer makes still decode.
import { Worker } from 'node:worker_threads';
import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { AVRO_FILE_INFLATED_BYTES_MAX, AVRO_FILE_RECORDS_MAX, avroRecordSchema, decodeAvroContainer, encodeAvroContainer } from '../src/avro-container.js';
import { AVRO_READS_PER_VALUE_MAX, readsPerValueMax } from '../src/bounded-avro-types.js';
import { MANIFEST_ENTRY_AVRO_SCHEMA, MANIFEST_FILE_AVRO_SCHEMA } from '../src/index.js';
import { avroFile, long, MAGIC, SYNC, text } from './avro-bytes.js';

const file = avroFile;

const READER = { type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'tags', type: { type: 'array', items: 'long' }, default: [] }] };
const WITH_JUNK = { type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'junk', type: { type: 'array', items: 'long' } }] };
const WITH_MAP = { type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'junk', type: { type: 'map', values: 'long' } }] };

/**
 * Decodes in a worker thread of the built module, stopped after 10 s: a count decoded item by
 * item never returns, and would hold the test's own thread for good.
 */
async function decodeWithin(bytes: Uint8Array, readerSchema: unknown = READER): Promise<{ outcome: 'decoded' | 'refused' | 'hung'; code?: string; message?: string; records?: unknown }> {
  const dist = new URL('../dist/avro-container.js', import.meta.url).href;
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    import(${JSON.stringify(dist)}).then(({ avroRecordSchema, decodeAvroContainer }) => {
      try {
        const { records } = decodeAvroContainer(workerData.bytes, avroRecordSchema(workerData.reader).type, 'the test file');
        parentPort.postMessage({ outcome: 'decoded', records: JSON.stringify(records) });
      } catch (err) {
        parentPort.postMessage({ outcome: 'refused', code: err.code, message: err.message });
      }
    });`,
    { eval: true, workerData: { bytes, reader: readerSchema } },
  );
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve({ outcome: 'hung' }), 10_000);
      worker.once('message', (answer: { outcome: 'decoded' | 'refused'; code?: string; message?: string; records?: string }) => {
        clearTimeout(timer);
        resolve({ ...answer, ...(answer.records === undefined ? {} : { records: JSON.parse(answer.records) as unknown }) });
      });
      worker.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  } finally {
    await worker.terminate();
  }
}

function refusal(message: RegExp) {
  return { outcome: 'refused', code: 'AUDIT_TABLE_INVALID', message: expect.stringMatching(message) as unknown };
}

describe('Avro counts the bytes cannot hold', () => {
  it('refuses a header declaring 2^50 entries in 12 bytes (the manifest list a review planted)', async () => {
    const bytes = Uint8Array.from([...MAGIC, ...long(2n ** 50n)]);
    expect(bytes.byteLength).toBe(12);
    expect(await decodeWithin(bytes)).toMatchObject(refusal(/the test file is not readable: bad header: a block declares 1125899906842624 map entries with 0 bytes left/));
  });

  it('refuses an array inside a record whose count is above the bytes left, read or skipped by resolution', async () => {
    // Read: the reader has `tags`.
    expect(await decodeWithin(file(READER, 1, [...long(7), ...long(2n ** 40n), ...long(1), 0]))).toMatchObject(refusal(/bad record: a block declares 1099511627776 array items with 2 bytes left/));
    // Skipped: `junk` is the writer's alone.
    expect(await decodeWithin(file(WITH_JUNK, 1, [...long(7), ...long(2n ** 40n), ...long(1), 0]))).toMatchObject(refusal(/bad record: a block declares 1099511627776 array items/));
    expect(await decodeWithin(file(WITH_MAP, 1, [...long(7), ...long(2n ** 40n), ...text('k'), ...long(1), 0]))).toMatchObject(refusal(/bad record: a block declares 1099511627776 map entries/));
    // A block the writer gave a size for may be skipped whole, but not by a negative size, which stepped back for good.
    expect(await decodeWithin(file(WITH_JUNK, 1, [...long(7), ...long(-1), ...long(-3), 0]))).toMatchObject(refusal(/bad record: a block gives a negative byte size \(-3\)/));
  });

  it('refuses items or records that take no bytes, and a block declaring more records than its bytes', async () => {
    const nulls = { type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'tags', type: { type: 'array', items: 'null' } }] };
    expect(await decodeWithin(file(nulls, 1, [...long(7), ...long(1), 0]), nulls)).toMatchObject(refusal(/bad record: array items that take no bytes/));
    const empty = { type: 'record', name: 'Row', fields: [{ name: 'nothing', type: 'null' }] };
    expect(await decodeWithin(file(empty, 1, [0]), empty)).toMatchObject(refusal(/its records take no bytes/));
    expect(await decodeWithin(file(empty, 2n ** 40n, []), empty)).toMatchObject(refusal(/a block of 0 bytes declares 1099511627776 records/));
    expect(await decodeWithin(file(READER, 1000, [...long(7), 0]))).toMatchObject(refusal(/a block of 2 bytes declares 1000 records/));
  });

  it('refuses a writer schema whose one value makes more reads than AVRO_READS_PER_VALUE_MAX without taking a byte (records of records of nulls), and the table schemas are far below it', async () => {
    // N0: ten nulls; N(i): ten fields of N(i-1), each named once and reused. One value of N9 is 10^10 reads of nothing.
    const nested: Record<string, unknown>[] = [{ type: 'record', name: 'N0', fields: Array.from({ length: 10 }, (_, f) => ({ name: `f${f}`, type: 'null' })) }];
    for (let level = 1; level <= 9; level++) nested.push({ type: 'record', name: `N${level}`, fields: Array.from({ length: 10 }, (_, f) => ({ name: `f${f}`, type: f === 0 ? nested[level - 1] : `N${level - 1}` })) });
    const writer = { type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'junk', type: nested[9] }] };
    const bytes = file(writer, 1, long(7));
    expect(bytes.byteLength).toBeLessThan(4096);
    expect(await decodeWithin(bytes)).toMatchObject(refusal(/its schema makes 11111111113 reads of one value without taking a byte, more than the 1000 allowed/));
    // What Iceberg's files are written with: tens of reads a value.
    expect(readsPerValueMax(avroRecordSchema(MANIFEST_ENTRY_AVRO_SCHEMA).type)).toBe(39);
    expect(readsPerValueMax(avroRecordSchema(MANIFEST_FILE_AVRO_SCHEMA).type)).toBe(18);
    expect(AVRO_READS_PER_VALUE_MAX).toBeGreaterThan(20 * 39);
  });

  it('still decodes what a writer makes: arrays in several blocks, a block with its byte size, maps, skipped fields', async () => {
    // Two blocks of tags, the second with a negative count and its byte size (as Java may write).
    const tags = [...long(7), ...long(2), ...long(1), ...long(2), ...long(-1), ...long(1), ...long(3), 0];
    expect(await decodeWithin(file(READER, 1, tags))).toMatchObject({ outcome: 'decoded', records: [{ id: 7, tags: [1, 2, 3] }] });
    // The writer's `junk` skipped, in a block of its own and one given whole by its size.
    const junk = [...long(8), ...long(1), ...long(5), ...long(-2), ...long(2), ...long(6), ...long(7), 0];
    expect(await decodeWithin(file(WITH_JUNK, 1, junk))).toMatchObject({ outcome: 'decoded', records: [{ id: 8, tags: [] }] });
    const map = { type: 'record', name: 'Row', fields: [{ name: 'attrs', type: { type: 'map', values: 'string' } }] };
    const schema = avroRecordSchema(map);
    const written = encodeAvroContainer({ schema, metadata: { note: 'kept' }, records: [{ attrs: JSON.parse('{"a":"x","__proto__":"data"}') as Record<string, string> }] });
    const decoded = decodeAvroContainer(written, schema.type, 'a written file');
    expect(decoded.metadata).toEqual({ note: 'kept' });
    const attrs = (decoded.records[0] as { attrs: Record<string, string> }).attrs;
    // A key `__proto__` is an entry like any other, not the map's prototype.
    expect(Object.getPrototypeOf(attrs)).toBe(Object.prototype);
    expect(Object.entries(attrs)).toEqual([['a', 'x'], ['__proto__', 'data']]);
  });
});

describe('Avro files bigger than one file may be', () => {
  /** A container file of `codec` with `schema` and the given blocks (each its record count and its bytes as written). */
  function blocksFile(schema: unknown, codec: 'null' | 'deflate', blocks: ReadonlyArray<{ count: number; data: Uint8Array }>): Uint8Array {
    const header = [...MAGIC, ...long(2), ...text('avro.schema'), ...text(JSON.stringify(schema)), ...text('avro.codec'), ...text(codec), 0, ...SYNC];
    const parts: Uint8Array[] = [Uint8Array.from(header)];
    for (const block of blocks) parts.push(Uint8Array.from([...long(block.count), ...long(block.data.byteLength)]), block.data, Uint8Array.from(SYNC));
    return Buffer.concat(parts);
  }

  it('refuses deflate blocks that inflate past AVRO_FILE_INFLATED_BYTES_MAX together, each under the block bound (~60 KB on the wire apiece); fewer decode', () => {
    const schema = { type: 'record', name: 'Blob', fields: [{ name: 'id', type: 'long' }, { name: 'payload', type: 'bytes' }] };
    const payloadBytes = 60 * 1024 * 1024;
    // One record: id 0, then 60 MiB of zeros, deflated to a few dozen KB.
    const block = { count: 1, data: deflateRawSync(Buffer.concat([Uint8Array.from([...long(0), ...long(payloadBytes)]), new Uint8Array(payloadBytes)])) };
    const fits = Math.floor(AVRO_FILE_INFLATED_BYTES_MAX / payloadBytes);
    const bomb = blocksFile(schema, 'deflate', Array.from({ length: fits + 1 }, () => block));
    expect(bomb.byteLength).toBeLessThan(2 * 1024 * 1024);
    const reader = avroRecordSchema(schema).type;
    expect(() => decodeAvroContainer(bomb, reader, 'the test file')).toThrow(
      expect.objectContaining({ code: 'AUDIT_TABLE_INVALID', message: `the test file is not readable: its blocks inflate beyond the ${AVRO_FILE_INFLATED_BYTES_MAX} bytes one file may hold` }),
    );
    const { records } = decodeAvroContainer(blocksFile(schema, 'deflate', Array.from({ length: fits }, () => block)), reader, 'the test file');
    expect(records.map((record) => (record as { payload: Uint8Array }).payload.byteLength)).toEqual(Array.from({ length: fits }, () => payloadBytes));
  });

  it('refuses blocks declaring more than AVRO_FILE_RECORDS_MAX records together, before decoding the block past it; fewer decode', () => {
    const perBlock = Math.ceil(AVRO_FILE_RECORDS_MAX / 2) + 1;
    // Records of two bytes: id 0 and an empty tags array.
    const block = { count: perBlock, data: new Uint8Array(2 * perBlock) };
    const reader = avroRecordSchema(READER).type;
    expect(() => decodeAvroContainer(blocksFile(READER, 'null', [block, block]), reader, 'the test file')).toThrow(
      expect.objectContaining({ code: 'AUDIT_TABLE_INVALID', message: `the test file is not readable: its blocks declare more than the ${AVRO_FILE_RECORDS_MAX} records one file may hold` }),
    );
    expect(decodeAvroContainer(blocksFile(READER, 'null', [block]), reader, 'the test file').records).toHaveLength(perBlock);
  });
});
