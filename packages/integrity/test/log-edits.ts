// Random single edits of a built log (a field, a deleted, swapped or conflicting record, a cut
// tail, a forged checkpoint), for the verifier's property tests.
import fc from 'fast-check';
import type { ChainVerifierOptions, VerifyRecord } from '../src/index.js';
import { buildLog, event, newKey, type BuiltLog } from './log-builder.js';

const KEY = newKey();

export const FIELD_EDITS: Array<(r: VerifyRecord) => Partial<VerifyRecord>> = [
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
  // A v3 record's key changed, or a key given to a v2 record.
  (r) => ({ salt: r.salt === undefined ? keyOf(0xff) : `${r.salt[0] === 'A' ? 'B' : 'A'}${r.salt.slice(1)}` }),
  () => ({ recordHash: undefined, chainHash: undefined, fieldCheck: undefined }),
];

/** A record key K (16 bytes, base64url) made of `seed`: deterministic, unlike ingest's. */
export function keyOf(seed: number): string {
  return Buffer.alloc(16, seed & 0xff).toString('base64url');
}

function flip(hex: string | undefined): string {
  const value = hex as string;
  return (value[0] === '0' ? '1' : '0') + value.slice(1);
}

export type Edit =
  | { kind: 'field'; at: number; which: number }
  | { kind: 'delete'; at: number }
  | { kind: 'swap'; at: number; distance: number }
  | { kind: 'conflict'; at: number }
  | { kind: 'truncate'; count: number }
  | { kind: 'forge'; at: number };

export function apply(log: BuiltLog, edit: Edit): { records: VerifyRecord[]; options: ChainVerifierOptions } {
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

export const editArb: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('field' as const), at: fc.nat(), which: fc.nat() }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), distance: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ kind: fc.constant('conflict' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('truncate' as const), count: fc.nat() }),
  fc.record({ kind: fc.constant('forge' as const), at: fc.nat() }),
);

export const logArb = fc.record({
  count: fc.integer({ min: 1, max: 40 }),
  every: fc.integer({ min: 1, max: 12 }),
  withSource: fc.boolean(),
});

export function makeLog(spec: { count: number; every: number; withSource: boolean }): BuiltLog {
  // Two of three records salted (content format v3), the rest v2: a log written across the upgrade.
  const events = Array.from({ length: spec.count }, (_, i) => event({ ...(spec.withSource && i % 2 === 0 ? { sourceId: 'plugin-1', sourceSeq: i } : {}), ...(i % 3 === 0 ? {} : { salt: keyOf(i) }) }));
  return buildLog(events, { checkpointEvery: spec.every, key: KEY });
}

