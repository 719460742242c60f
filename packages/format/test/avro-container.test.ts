// Goal: decoding an Avro container resolves its writer schema once per reader type and schema — a table's manifests all carry the same few — while files with a different writer schema still decode by their own.
import avsc from 'avsc';
import { describe, expect, it } from 'vitest';
import { avroRecordSchema, decodeAvroContainer, encodeAvroContainer } from '../src/avro-container.js';

const READER = avsc.Type.forSchema({ type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'note', type: 'string', default: '' }] });
const WRITER_ID = avroRecordSchema({ type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }] });
const WRITER_ID_NOTE = avroRecordSchema({ type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'note', type: 'string' }] });

describe('decodeAvroContainer', () => {
  it('resolves a writer schema once per reader type, and decodes each file by its own writer schema', () => {
    const withIds = (first: number) => encodeAvroContainer({ schema: WRITER_ID, metadata: {}, records: [{ id: first }, { id: first + 1 }] });
    const withNotes = encodeAvroContainer({ schema: WRITER_ID_NOTE, metadata: {}, records: [{ id: 7, note: 'seven' }] });
    // avsc types are frozen: the reader is seen through a proxy that counts its resolutions.
    let resolutions = 0;
    const reader = new Proxy(READER, {
      get(target, property, receiver) {
        if (property === 'createResolver') resolutions++;
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    expect(decodeAvroContainer(withIds(1), reader, 'first').records).toEqual([{ id: 1, note: '' }, { id: 2, note: '' }]);
    expect(decodeAvroContainer(withIds(10), reader, 'second').records).toEqual([{ id: 10, note: '' }, { id: 11, note: '' }]);
    expect(resolutions).toBe(1);
    // Another writer schema: resolved on its own (its field is read, not defaulted).
    expect(decodeAvroContainer(withNotes, reader, 'third').records).toEqual([{ id: 7, note: 'seven' }]);
    expect(decodeAvroContainer(withIds(20), reader, 'fourth').records).toEqual([{ id: 20, note: '' }, { id: 21, note: '' }]);
    expect(resolutions).toBe(2);
  });
});
