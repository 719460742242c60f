// Goal: checking records straight from their columns (a tiered file decoded column by column)
// gives exactly the batch that checking the same records as objects gives — for random logs
// with a random edit, rows in any order, records with erased fields (and an empty erased
// object), records of the integrity actions, rows written before the chain (no seq: counted,
// not checked) and table lists whose names hold commas — and refuses a bad seq as the object
// check does.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkColumnsToBatch,
  checkRecordsToBatch,
  ERASED_MARKER,
  fieldHash,
  RecordHasher,
  tablesText,
  type RecordColumns,
  type VerifyRecord,
} from '../src/index.js';
import { apply, editArb, logArb, makeLog } from './log-edits.js';

/** Records, and rows without a seq, laid out as columns in the given order. */
function columnsOf(rows: ReadonlyArray<VerifyRecord | Omit<VerifyRecord, 'seq'>>): RecordColumns {
  const pick = <T>(get: (row: VerifyRecord) => T): T[] => rows.map((row) => get(row as VerifyRecord));
  return {
    count: rows.length,
    seq: pick((r) => ('seq' in r ? r.seq : undefined)),
    term: pick((r) => r.term),
    ingestTs: pick((r) => r.ingestTs),
    timestamp: pick((r) => r.timestamp),
    eventId: pick((r) => r.eventId),
    userId: pick((r) => r.userId),
    source: pick((r) => r.source),
    action: pick((r) => r.action),
    resource: pick((r) => r.resource),
    decision: pick((r) => r.decision),
    tables: pick((r) => tablesText(r.tables)),
    query: pick((r) => r.query),
    details: pick((r) => r.details),
    sourceId: pick((r) => r.sourceId),
    sourceSeq: pick((r) => r.sourceSeq),
    recordHash: pick((r) => r.recordHash),
    chainHash: pick((r) => r.chainHash),
    fieldCheck: pick((r) => r.fieldCheck),
    erased: pick((r) => r.erased),
    salt: pick((r) => r.salt),
  };
}

/** The record with `field` erased as erasure does it: the marker in place, the field hash kept. */
function erase(record: VerifyRecord, field: 'query' | 'details' | 'tables'): VerifyRecord {
  const text = field === 'tables' ? tablesText(record.tables) : record[field];
  return { ...record, [field]: field === 'tables' ? [ERASED_MARKER] : ERASED_MARKER, erased: { ...record.erased, [field]: fieldHash(text) } };
}

describe('checkColumnsToBatch', () => {
  it('gives the batch checkRecordsToBatch gives for the same records, whatever the edit and the row order', () => {
    fc.assert(
      fc.property(logArb, editArb, fc.nat(), fc.integer({ min: 0, max: 3 }), (spec, edit, shuffleSeed, legacy) => {
        const log = makeLog(spec);
        const { records } = apply(log, edit);
        const varied = records.map((record, i) => {
          if (i % 5 === 1) return erase(record, 'query');
          if (i % 7 === 2) return erase(erase(record, 'details'), 'tables');
          if (i % 6 === 3) return { ...record, erased: {} };
          if (i % 4 === 0) return { ...record, tables: ['a,b', 'c'] };
          return record;
        });
        // A tier file holds its rows in event time order, not seq order.
        const shuffled = [...varied].sort((a, b) => ((a.seq * 7919 + shuffleSeed) % 97) - ((b.seq * 7919 + shuffleSeed) % 97));
        const withoutSeq = Array.from({ length: legacy }, (_, i) => {
          const { seq: _seq, recordHash: _r, chainHash: _c, fieldCheck: _f, ...values } = log.records[i % log.records.length] as VerifyRecord;
          return values;
        });
        const rows = [...withoutSeq, ...shuffled];
        const fromColumns = checkColumnsToBatch(columnsOf(rows), new RecordHasher());
        expect(fromColumns).toEqual(checkRecordsToBatch(shuffled, new RecordHasher(), legacy));
      }),
      { numRuns: 200 },
    );
  });

  it('checks the integrity actions and a record whose stored hash differs as the object check does', () => {
    const { records } = makeLog({ count: 6, every: 2, withSource: true });
    const edited = records.map((record, i) => (i === 3 ? { ...record, query: `${record.query} edited` } : record));
    const batch = checkColumnsToBatch(columnsOf(edited), new RecordHasher());
    expect(batch.extras.length).toBeGreaterThan(1);
    expect(batch).toEqual(checkRecordsToBatch(edited, new RecordHasher()));
  });

  it('refuses a seq that is not a positive integer with the words of the object check', () => {
    const { records } = makeLog({ count: 2, every: 2, withSource: false });
    const bad = { ...(records[0] as VerifyRecord), seq: 0 };
    expect(() => checkColumnsToBatch(columnsOf([bad]), new RecordHasher())).toThrow('record seq must be a positive integer, got 0');
    expect(() => checkRecordsToBatch([bad], new RecordHasher())).toThrow('record seq must be a positive integer, got 0');
  });
});
