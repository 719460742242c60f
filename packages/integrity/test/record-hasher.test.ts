import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalRecord,
  chainHash,
  eraseRecordFields,
  ERASABLE_FIELDS,
  fieldCheckOf,
  GENESIS_CHAIN_HASH,
  HASHED_FIELDS,
  newSaltKey,
  RecordHasher,
  recordHashOf,
  type ErasableField,
  type HashedField,
  type RecordValues,
} from '../src/index.js';

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

/**
 * The field salts of a v3 record, the obvious way: its key K (22 base64url characters) as bytes
 * through SHA-512, cut into 12-byte salts for userId, resource, tables, query, details, each
 * written as base64url (16 characters); or, once a field was erased, the kept salts
 * (`.`-separated, empty when erased).
 */
function referenceSalts(salt: string): Partial<Record<HashedField, string>> {
  const salts: Partial<Record<HashedField, string>> = {};
  if (!salt.includes('.')) {
    const derived = createHash('sha512').update(Buffer.from(salt, 'base64url')).digest();
    ERASABLE_FIELDS.forEach((name, i) => (salts[name] = derived.subarray(i * 12, i * 12 + 12).toString('base64url')));
  } else {
    salt.split('.').forEach((part, i) => {
      if (part !== '') salts[ERASABLE_FIELDS[i] as ErasableField] = part;
    });
  }
  return salts;
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
  const salts = values.salt === undefined ? {} : referenceSalts(values.salt);
  const fieldHashes = HASHED_FIELDS.map((name) => {
    const salt = salts[name];
    if (values.erased?.[name] !== undefined) return values.erased[name];
    // The salt's 16 base64url characters, then the value: SHA-256 of their UTF-8 bytes.
    return salt === undefined ? sha256(text[name]) : createHash('sha256').update(salt, 'ascii').update(text[name], 'utf8').digest('hex');
  });
  const eventIdText = JSON.stringify(values.eventId);
  const sourceIdText = values.sourceId === undefined ? '' : JSON.stringify(values.sourceId);
  const sourceSeqText = values.sourceSeq === undefined ? '' : String(values.sourceSeq);
  const content = sha256(`auditlake-content/${values.salt === undefined ? 2 : 3}\n${values.timestamp}\n${eventIdText}\n${sourceIdText}\n${sourceSeqText}\n${fieldHashes.join('')}`);
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
  // Content format v3 (a key K) or v2 (none).
  salt: fc.option(fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => Buffer.from(bytes).toString('base64url')), { nil: undefined }),
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
        record.salt,
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
        // The salt changed, added or removed: no match.
        expect(matches({ ...record, salt: record.salt === undefined ? newSaltKey() : flipSalt(record.salt) }, want.recordHash, want.fieldCheck)).toBe(false);
        if (record.salt !== undefined) expect(matches({ ...record, salt: undefined }, want.recordHash, want.fieldCheck)).toBe(false);
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

  it('salts the five erasable fields of a v3 record and only those, with salts from its key', () => {
    const salted = { ...BASE, salt: BASE_KEY };
    const v2 = new RecordHasher().digest(canonicalRecord(BASE));
    const v3 = new RecordHasher().digest(canonicalRecord(salted));
    expect(v3).toMatchObject(referenceDigest(salted));
    expect(v3.recordHash).not.toBe(v2.recordHash);
    // The field check parts: eventId, then userId, source, action, resource, decision, tables, query, details.
    const part = (check: string, i: number) => check.slice(i * 4, i * 4 + 4);
    for (const i of [1, 4, 6, 7, 8]) expect(part(v3.fieldCheck, i)).not.toBe(part(v2.fieldCheck, i));
    for (const i of [0, 2, 3, 5, 9, 10, 11, 12, 13]) expect(part(v3.fieldCheck, i)).toBe(part(v2.fieldCheck, i));
    expect(v3.recordHash).toBe(PINNED_SALTED_RECORD_HASH);
  });

  it('verifies a v3 record after each of its fields is erased in turn, and a guess of an erased value is not its kept hash', () => {
    const hasher = new RecordHasher();
    // A record with its chain fields (the kept hashes are what its record hash commits to).
    let record: RecordValues & { recordHash: string } = { ...BASE, salt: newSaltKey(), recordHash: 'a'.repeat(64) };
    const want = referenceDigest(record);
    for (const field of ['userId', 'tables', 'details', 'resource', 'query'] as const) {
      const original = field === 'tables' ? record.tables.join(',') : record[field];
      record = eraseRecordFields(record, [field]) as typeof record;
      expect(record.salt?.split('.')).toHaveLength(5);
      expect(hasher.digest(canonicalRecord(record))).toMatchObject(want);
      expect(referenceDigest(record)).toEqual(want);
      expect(record.erased?.[field]).not.toBe(sha256(original));
    }
    expect(record.salt).toBe('....');
    // A salt kept beside an erased field (one that would confirm a guess), or the key kept beside
    // one, or a salt missing for a field not erased: the record no longer verifies.
    const once = eraseRecordFields({ ...BASE, salt: newSaltKey(), recordHash: 'a'.repeat(64) }, ['userId']) as RecordValues;
    const parts = (once.salt as string).split('.');
    for (const salt of [`${parts[1]}.${parts.slice(1).join('.')}`, `..${parts.slice(2).join('.')}`, 'not a salt']) {
      const digest = hasher.digest(canonicalRecord({ ...once, salt }));
      expect(digest.recordHash).not.toBe(referenceDigest(once).recordHash);
    }
    expect(hasher.digest(canonicalRecord({ ...once, salt: BASE_KEY })).recordHash).not.toBe(referenceDigest(once).recordHash);
  });

  it('keeps for a record without chain fields a hash nothing confirms (no record hash commits to it), and for a chained v2 record the plain hash it was chained with', () => {
    for (const unchained of [BASE, { ...BASE, salt: newSaltKey() }]) {
      const erased = eraseRecordFields(unchained, ['userId', 'tables']) as RecordValues;
      expect(erased).toMatchObject({ userId: '[erased by auditlake]', tables: ['[erased by auditlake]'] });
      expect(erased.erased?.userId).toMatch(/^[0-9a-f]{64}$/);
      expect(erased.erased?.userId).not.toBe(sha256(BASE.userId));
      expect(erased.erased?.tables).not.toBe(sha256(BASE.tables.join(',')));
    }
    const v2 = eraseRecordFields({ ...BASE, recordHash: 'a'.repeat(64) }, ['userId']) as RecordValues;
    expect(v2.erased?.userId).toBe(sha256(BASE.userId));
    expect(new RecordHasher().digest(canonicalRecord(v2))).toMatchObject(referenceDigest(BASE));
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

/** 0x00..0x0f as a key, base64url. */
const BASE_KEY = 'AAECAwQFBgcICQoLDA0ODw';

function flipSalt(salt: string): string {
  const at = salt.search(/[A-Za-z0-9_-]/);
  return `${salt.slice(0, at)}${salt[at] === 'A' ? 'B' : 'A'}${salt.slice(at + 1)}`;
}

const PINNED_SALTED_RECORD_HASH = '15d93a173e8aacc9719e8631a140f0f2a52dbc4bb237783a97c58e97a9055442';
const PINNED_RECORD_HASH = '97941be7393b9989ec981029f4a48bc2d6024460086f8a6acf79a13d4b1b5a52';
const PINNED_CHAIN_HASH = 'c006387238e1894d00b5783a1246a4287a587f4553c8bf3492ff3ff63de27515';
