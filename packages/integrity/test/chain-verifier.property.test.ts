// Goal: for random histories and random single edits, the verifier passes every untouched
// history and fails on every edit (fast-check prints the seed of a failing case to replay it).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChainVerifier, type ChainVerifierOptions, type VerifyRecord } from '../src/index.js';
import { buildLog, event, newKey, type BuiltLog } from './log-builder.js';

const KEY = newKey();

function verify(records: readonly VerifyRecord[], options: ChainVerifierOptions): boolean {
  const verifier = new ChainVerifier({ startSeq: 1, ...options });
  for (const record of [...records].sort((a, b) => a.seq - b.seq)) verifier.add(record);
  return verifier.finish().ok;
}

const FIELD_EDITS: Array<(r: VerifyRecord) => Partial<VerifyRecord>> = [
  (r) => ({ eventId: r.eventId + 'x' }),
  (r) => ({ userId: r.userId + 'x' }),
  (r) => ({ source: r.source + 'x' }),
  (r) => ({ action: r.action + 'x' }),
  (r) => ({ resource: r.resource + 'x' }),
  (r) => ({ decision: r.decision === 'DENY' ? 'ALLOW' : 'DENY' }),
  (r) => ({ tables: [...r.tables, 'y'] }),
  (r) => ({ query: r.query + ' ' }),
  (r) => ({ details: r.details + 'x' }),
  (r) => ({ timestamp: r.timestamp + 1 }),
  (r) => ({ ingestTs: r.ingestTs + 1 }),
  (r) => ({ term: r.term + 1 }),
  (r) => ({ sourceId: r.sourceId === undefined ? '' : undefined }),
  (r) => ({ sourceSeq: r.sourceSeq === undefined ? 0 : r.sourceSeq + 1 }),
  (r) => ({ recordHash: flip(r.recordHash) }),
  (r) => ({ chainHash: flip(r.chainHash) }),
  (r) => ({ fieldCheck: flip(r.fieldCheck) }),
  () => ({ recordHash: undefined, chainHash: undefined, fieldCheck: undefined }),
];

function flip(hex: string | undefined): string {
  const value = hex as string;
  return (value[0] === '0' ? '1' : '0') + value.slice(1);
}

type Edit =
  | { kind: 'field'; at: number; which: number }
  | { kind: 'delete'; at: number }
  | { kind: 'swap'; at: number; distance: number }
  | { kind: 'conflict'; at: number }
  | { kind: 'truncate'; count: number }
  | { kind: 'forge'; at: number };

function apply(log: BuiltLog, edit: Edit): { records: VerifyRecord[]; options: ChainVerifierOptions } {
  const records = [...log.records];
  const n = records.length;
  const index = (at: number) => at % n;
  const options: ChainVerifierOptions = { checkpoints: log.checkpoints.map((checkpoint) => ({ checkpoint, where: 'digest' })) };
  switch (edit.kind) {
    case 'field': {
      const i = index(edit.at);
      const record = records[i] as VerifyRecord;
      records[i] = { ...record, ...(FIELD_EDITS[edit.which % FIELD_EDITS.length] as (r: VerifyRecord) => Partial<VerifyRecord>)(record) };
      break;
    }
    case 'delete':
      records.splice(index(edit.at), 1);
      break;
    case 'swap': {
      const i = index(edit.at);
      const j = Math.min(n - 1, i + edit.distance);
      if (i === j) return apply(log, { kind: 'delete', at: edit.at });
      const a = records[i] as VerifyRecord;
      const b = records[j] as VerifyRecord;
      records[i] = { ...b, seq: a.seq };
      records[j] = { ...a, seq: b.seq };
      break;
    }
    case 'conflict': {
      const record = records[index(edit.at)] as VerifyRecord;
      records.push({ ...record, query: record.query + '!' });
      break;
    }
    case 'truncate':
      records.splice(n - 1 - (edit.count % n), n);
      break;
    case 'forge': {
      const checkpoints = [...log.checkpoints];
      const i = edit.at % checkpoints.length;
      const real = checkpoints[i]!;
      checkpoints[i] = { ...real, chainHash: flip(real.chainHash) };
      options.checkpoints = checkpoints.map((checkpoint) => ({ checkpoint, where: 'digest' }));
      break;
    }
  }
  return { records, options };
}

const editArb: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('field' as const), at: fc.nat(), which: fc.nat() }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), distance: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ kind: fc.constant('conflict' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('truncate' as const), count: fc.nat() }),
  fc.record({ kind: fc.constant('forge' as const), at: fc.nat() }),
);

const logArb = fc.record({
  count: fc.integer({ min: 1, max: 40 }),
  every: fc.integer({ min: 1, max: 12 }),
  withSource: fc.boolean(),
});

function makeLog(spec: { count: number; every: number; withSource: boolean }): BuiltLog {
  const events = Array.from({ length: spec.count }, (_, i) => event(spec.withSource && i % 2 === 0 ? { sourceId: 'plugin-1', sourceSeq: i } : {}));
  return buildLog(events, { checkpointEvery: spec.every, key: KEY });
}

describe('verify (property)', () => {
  it('passes every untouched history and fails on every single edit', () => {
    fc.assert(
      fc.property(logArb, editArb, (spec, edit) => {
        const log = makeLog(spec);
        expect(verify(log.records, { checkpoints: log.checkpoints.map((checkpoint) => ({ checkpoint, where: 'digest' })) })).toBe(true);
        const edited = apply(log, edit);
        expect(verify(edited.records, edited.options)).toBe(false);
      }),
      { numRuns: 400 },
    );
  });
});
