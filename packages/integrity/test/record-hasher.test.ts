import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalRecord, chainHash, fieldCheckOf, GENESIS_CHAIN_HASH, HASHED_FIELDS, RecordHasher, recordHashOf, type HashedField, type RecordValues } from '../src/index.js';

/*
 * The hashes written out from docs/integrity.md ("The canonical encoding") the slow, obvious
 * way: the hasher's caches, lookup tables and string building must give exactly these.
 */
function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function fnvCheck(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return ((h ^ (h >>> 16)) & 0xffff).toString(16).padStart(4, '0');
}

function referenceDigest(values: RecordValues): { recordHash: string; fieldCheck: string } {
  const text: Record<HashedField, string> = {
    userId: values.userId,
    source: values.source,
    action: values.action,
    resource: values.resource,
    decision: values.decision,
    tables: values.tables.join(','),
    query: values.query,
    details: values.details,
  };
  const fieldHashes = HASHED_FIELDS.map((name) => values.erased?.[name] ?? sha256(text[name]));
  const eventIdText = JSON.stringify(values.eventId);
  const sourceIdText = values.sourceId === undefined ? '' : JSON.stringify(values.sourceId);
  const sourceSeqText = values.sourceSeq === undefined ? '' : String(values.sourceSeq);
  const content = sha256(`auditlake-content/2\n${values.timestamp}\n${eventIdText}\n${sourceIdText}\n${sourceSeqText}\n${fieldHashes.join('')}`);
  const recordHash = sha256(`auditlake-record/2\n${values.seq}\n${values.term}\n${values.ingestTs}\n${content}`);
  const fieldCheck = [
    fnvCheck(eventIdText),
    ...fieldHashes.map((digest) => digest.slice(0, 4)),
    fnvCheck(String(values.timestamp)),
    fnvCheck(String(values.ingestTs)),
    fnvCheck(String(values.term)),
    fnvCheck(sourceIdText),
    fnvCheck(sourceSeqText),
  ].join('');
  return { recordHash, fieldCheck };
}

const BASE: RecordValues = {
  seq: 7,
  term: 3,
  ingestTs: 1_735_689_600_123,
  timestamp: 1_735_689_600_000,
  eventId: '01941f29-7c00-7c43-9069-c43a8c3b7cf3',
  userId: 'chen.novak',
  source: 'trino',
  action: 'data:Select',
  resource: 'warehouse.risk.chargebacks',
  decision: 'ALLOW',
  tables: ['warehouse.risk.chargebacks', 'hive.growth.audit_trail'],
  query: 'SELECT * FROM warehouse.risk.chargebacks',
  details: 'queryId=20250101_abc client=cli',
};

const text = fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.toWellFormed());
const values: fc.Arbitrary<RecordValues> = fc.record({
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
  term: fc.integer({ min: 0, max: 1000 }),
  ingestTs: fc.integer({ min: 0, max: 2 ** 45 }),
  timestamp: fc.integer({ min: 0, max: 2 ** 45 }),
  eventId: text,
  userId: fc.oneof(fc.constantFrom('alice', 'bob'), text),
  source: fc.constantFrom('trino', 'spark'),
  action: fc.oneof(fc.constantFrom('data:Select', 'data:Insert'), text),
  resource: text,
  decision: fc.constantFrom('ALLOW', 'DENY'),
  tables: fc.array(text, { maxLength: 3 }),
  query: fc.oneof(text, fc.string({ minLength: 257, maxLength: 400 })),
  details: text,
  sourceId: fc.option(text, { nil: undefined }),
  sourceSeq: fc.option(fc.integer({ min: 0, max: 2 ** 50 }), { nil: undefined }),
});

describe('RecordHasher', () => {
  it('gives the hashes docs/integrity.md defines, for the same record asked again (cached) and for new ones', () => {
    const hasher = new RecordHasher();
    fc.assert(
      fc.property(values, (record) => {
        const want = referenceDigest(record);
        for (let i = 0; i < 2; i++) {
          const digest = hasher.digest(canonicalRecord(record));
          expect(digest.recordHash).toBe(want.recordHash);
          expect(digest.fieldCheck).toBe(want.fieldCheck);
          expect(recordHashOf(record.seq, record.term, record.ingestTs, digest.content)).toBe(want.recordHash);
          expect(fieldCheckOf(digest.content, record.term, record.ingestTs)).toBe(want.fieldCheck);
          // Ingest's path, from the values without their canonical form: the same content part.
          expect(hasher.contentOfValues(record)).toEqual(digest.content);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('says a record matches its stored hashes only when both are exactly what docs/integrity.md defines', () => {
    const hasher = new RecordHasher();
    const matches = (record: RecordValues, recordHash: string, fieldCheck: string) =>
      hasher.matchesStored(
        record.seq,
        record.term,
        record.ingestTs,
        record.timestamp,
        JSON.stringify(record.eventId),
        record.sourceId === undefined ? '' : JSON.stringify(record.sourceId),
        record.sourceSeq === undefined ? '' : String(record.sourceSeq),
        record.userId,
        record.source,
        record.action,
        record.resource,
        record.decision,
        record.tables.join(','),
        record.query,
        record.details,
        recordHash,
        fieldCheck,
      );
    fc.assert(
      fc.property(values, fc.nat(), (record, at) => {
        const want = referenceDigest(record);
        // Twice: the second time the cached field hashes answer.
        expect(matches(record, want.recordHash, want.fieldCheck)).toBe(true);
        expect(matches(record, want.recordHash, want.fieldCheck)).toBe(true);
        // Any one digit of either stored text changed, or the field check cut short: no match.
        const flip = (text: string, i: number) => `${text.slice(0, i)}${text[i] === '0' ? '1' : '0'}${text.slice(i + 1)}`;
        expect(matches(record, flip(want.recordHash, at % 64), want.fieldCheck)).toBe(false);
        expect(matches(record, want.recordHash, flip(want.fieldCheck, at % 56))).toBe(false);
        expect(matches(record, want.recordHash, want.fieldCheck.slice(0, 52))).toBe(false);
        // Any value changed: no match (its record hash, and nearly always its field check, differ).
        expect(matches({ ...record, details: `${record.details}.` }, want.recordHash, want.fieldCheck)).toBe(false);
        expect(matches({ ...record, seq: record.seq + 1 }, want.recordHash, want.fieldCheck)).toBe(false);
      }),
      { numRuns: 300 },
    );
    // Every part of the field check is compared: one digit changed in each 4-digit part.
    const want = referenceDigest(BASE);
    for (let part = 0; part < 14; part++) {
      const i = part * 4 + 1;
      const edited = `${want.fieldCheck.slice(0, i)}${want.fieldCheck[i] === 'f' ? 'e' : 'f'}${want.fieldCheck.slice(i + 1)}`;
      expect(matches(BASE, want.recordHash, edited)).toBe(false);
    }
  });

  it('takes an erased field from its kept hash, never from the marker it holds', () => {
    const kept = sha256(BASE.query);
    const erased = { ...BASE, query: '[erased by auditlake]', erased: { query: kept } };
    expect(new RecordHasher().digest(canonicalRecord(erased))).toMatchObject(referenceDigest(BASE));
    expect(new RecordHasher().contentOfValues(erased)).toEqual(new RecordHasher().digest(canonicalRecord(BASE)).content);
  });

  it('gives different hashes when any one value differs, cache or not', () => {
    const hasher = new RecordHasher();
    const base = hasher.digest(canonicalRecord(BASE));
    for (const change of [{ userId: 'chen.novak2' }, { tables: ['warehouse.risk.chargebacks'] }, { details: 'x' }, { sourceSeq: 1 }, { ingestTs: BASE.ingestTs + 1 }]) {
      const other = hasher.digest(canonicalRecord({ ...BASE, ...change }));
      expect(other.recordHash).not.toBe(base.recordHash);
      expect(other.fieldCheck).not.toBe(base.fieldCheck);
    }
  });

  it('keeps a pinned record hash (a change to it breaks every stored chain)', () => {
    const digest = new RecordHasher().digest(canonicalRecord({ ...BASE, sourceId: 'engine-1', sourceSeq: 42 }));
    expect(digest).toMatchObject(referenceDigest({ ...BASE, sourceId: 'engine-1', sourceSeq: 42 }));
    expect(digest.recordHash).toBe(PINNED_RECORD_HASH);
    expect(chainHash(GENESIS_CHAIN_HASH, digest.recordHash)).toBe(PINNED_CHAIN_HASH);
  });
});

const PINNED_RECORD_HASH = '97941be7393b9989ec981029f4a48bc2d6024460086f8a6acf79a13d4b1b5a52';
const PINNED_CHAIN_HASH = 'c006387238e1894d00b5783a1246a4287a587f4553c8bf3492ff3ff63de27515';
