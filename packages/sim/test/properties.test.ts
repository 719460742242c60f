// Goal: the end-of-run checks catch a lost acknowledged event, a log that differs anywhere, an event stored twice, a log that goes back, and a completeness ledger that disagrees with its own log.
import { describe, expect, it } from 'vitest';
import { checkLedger, checkLogs, type LedgerView, type LogEntry } from '../src/properties.js';
import type { Acked } from '../src/workload.js';

const entry = (seq: number, term: number, eventId: string): LogEntry => ({ seq, term, eventId });
const acked = (eventId: string): Acked => ({ eventId, ack: 'local', node: 'n0', atMs: 0 });

describe('checkLogs', () => {
  const good = [entry(1, 1, 'a'), entry(2, 1, 'b'), entry(3, 2, 'c')];

  it('passes identical logs holding every acknowledged event', () => {
    expect(checkLogs(new Map([['n0', good], ['n1', [...good]]]), [acked('a'), acked('c')])).toEqual([]);
  });

  it('reports a lost acknowledged event (property 1)', () => {
    expect(checkLogs(new Map([['n0', good]]), [acked('z')])).toEqual([expect.stringMatching(/^property 1: 1 acknowledged events are in no log: z/)]);
  });

  it('reports logs that differ in an entry’s term or id, or in length (property 2)', () => {
    expect(checkLogs(new Map([['n0', good], ['n1', [entry(1, 1, 'a'), entry(2, 2, 'b'), entry(3, 2, 'c')]]]), [])).toEqual([expect.stringMatching(/^property 2: n1's log differs from n0's at position 2/)]);
    expect(checkLogs(new Map([['n0', good], ['n1', good.slice(0, 2)]]), [])).toEqual([expect.stringMatching(/position 3: nothing where n0 has seq 3/)]);
  });

  it('reports an event stored twice and a log whose terms go back', () => {
    expect(checkLogs(new Map([['n0', [entry(1, 1, 'a'), entry(2, 1, 'a')]]]), [])).toEqual([expect.stringMatching(/eventId a is in the log twice/)]);
    expect(checkLogs(new Map([['n0', [entry(1, 2, 'a'), entry(2, 1, 'b')]]]), [])).toEqual([expect.stringMatching(/goes back at seq 2/)]);
  });
});

describe('checkLedger', () => {
  const T = Date.UTC(2026, 0, 1);
  const sent = (seq: number, sourceSeq: number): LogEntry => ({ seq, term: 1, eventId: `e${seq}`, source: 'trino', timestamp: T, sourceId: 's', sourceSeq });
  // sourceSeqs 1, 2 and 5: one hole, 3..4.
  const log = [sent(1, 1), sent(2, 2), sent(3, 5), { seq: 4, term: 1, eventId: 'e4', source: 'spark', timestamp: T }];
  const source = { sourceId: 's', received: 3, firstSourceSeq: 1, contiguousThrough: 2, highestSourceSeq: 5, gaps: [{ fromSeq: 3, toSeq: 4 }], gapCount: 1, gapsTruncated: false, missing: 2 };
  const row = (sourceId: string | null, engine: string, n: number) => ({ day: '2026-01-01', sourceId, source: engine, received: n, stored: n, tiered: 0, pruned: 0 });
  const ledger: LedgerView = { sources: [source], days: [row('s', 'trino', 3), row(null, 'spark', 1)] };

  it('passes a ledger that says what the log holds', () => {
    expect(checkLedger('n0', log, ledger)).toEqual([]);
  });

  it('reports a hole the log does not have, a source or day row missing, and counts that differ (property 5)', () => {
    expect(checkLedger('n0', log, { ...ledger, sources: [{ ...source, received: 2, gaps: [{ fromSeq: 2, toSeq: 4 }], missing: 3 }] })).toEqual([expect.stringMatching(/^property 5: n0's ledger has source s as .* where its log holds /)]);
    expect(checkLedger('n0', log, { ...ledger, sources: [] })).toEqual(["property 5: n0's log holds sourceSeqs of s, which its ledger does not list"]);
    expect(checkLedger('n0', log, { ...ledger, days: [row('s', 'trino', 3)] })).toEqual([`property 5: n0's log holds 1 events of ["2026-01-01",null,"spark"], which its day ledger has no row for`]);
    expect(checkLedger('n0', log, { ...ledger, days: [{ ...row('s', 'trino', 3), stored: -1, pruned: 4 }, row(null, 'spark', 1)] })).toEqual([expect.stringMatching(/^property 5: n0's day row \["2026-01-01","s","trino"\] counts received 3, stored -1, pruned 4 where its log holds 3$/)]);
    expect(checkLedger('n0', log, { ...ledger, days: [{ ...row('s', 'trino', 3), received: 4 }, row(null, 'spark', 1)] })).toEqual([expect.stringMatching(/counts received 4, stored 3, pruned 0 where its log holds 3$/)]);
  });

  it('once retention deleted events, bounds a source by its log: received and highest at least what the log holds', () => {
    const afterRetention = [sent(3, 5), { seq: 4, term: 1, eventId: 'e4', source: 'spark', timestamp: T }];
    const prunedRows = [{ ...row('s', 'trino', 3), stored: 1, pruned: 2 }, row(null, 'spark', 1)];
    expect(checkLedger('n0', afterRetention, { sources: [source], days: prunedRows })).toEqual([]);
    expect(checkLedger('n0', afterRetention, { sources: [{ ...source, highestSourceSeq: 4 }], days: prunedRows })).toEqual([expect.stringMatching(/^property 5: n0's ledger has source s .* \(retention deleted some\)$/)]);
  });
});
