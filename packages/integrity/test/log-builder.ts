// Builds chained logs the way a leader does (record hash, chain, key registration, signed
// checkpoints), for the verifier's tests.
import { generateKeyPairSync } from 'node:crypto';
import {
  canonicalRecord,
  chainHash,
  checkpointEvent,
  checkpointHash,
  GENESIS_CHAIN_HASH,
  keyRegistrationEvent,
  nodeKeyOf,
  publishKey,
  RecordHasher,
  signCheckpoint,
  type NodeKey,
  type RecordValues,
  type SignedCheckpoint,
  type VerifyRecord,
} from '../src/index.js';

export type EventValues = Omit<RecordValues, 'seq' | 'term' | 'ingestTs'>;

export function newKey(): NodeKey {
  return nodeKeyOf(generateKeyPairSync('ed25519').privateKey);
}

let idCounter = 0;
export function event(overrides: Partial<EventValues> = {}): EventValues {
  idCounter++;
  return {
    eventId: `ev-${idCounter}`,
    userId: 'alice',
    source: 'trino',
    action: 'data:Select',
    resource: 'hive.sales.orders',
    decision: 'ALLOW',
    tables: ['hive.sales.orders'],
    query: `SELECT * FROM hive.sales.orders WHERE id = ${idCounter}`,
    details: '',
    timestamp: 1_700_000_000_000 + idCounter,
    ...overrides,
  };
}

export interface BuiltLog {
  records: VerifyRecord[];
  checkpoints: SignedCheckpoint[];
  key: NodeKey;
}

/** The chain fields a record gets when appended after `previous` (as the leader computes them). */
export function chained(values: RecordValues, previous: string, hasher = new RecordHasher()): VerifyRecord {
  const digest = hasher.digest(canonicalRecord(values));
  return { ...values, recordHash: digest.recordHash, chainHash: chainHash(previous, digest.recordHash), fieldCheck: digest.fieldCheck };
}

/**
 * A log of `events` as one leader writes it: its key registered first, then the events, with a
 * signed checkpoint record after every `checkpointEvery` events and one at the end.
 */
export function buildLog(events: readonly EventValues[], options: { checkpointEvery?: number; key?: NodeKey; chainId?: string; term?: number; final?: boolean } = {}): BuiltLog {
  const key = options.key ?? newKey();
  const chainId = options.chainId ?? 'chain-a';
  const term = options.term ?? 1;
  const hasher = new RecordHasher();
  const records: VerifyRecord[] = [];
  const checkpoints: SignedCheckpoint[] = [];
  let previous = GENESIS_CHAIN_HASH;
  let previousCheckpoint = '';
  const append = (values: EventValues) => {
    const seq = records.length + 1;
    const record = chained({ ...values, seq, term, ingestTs: 1_700_000_000_000 + seq }, previous, hasher);
    records.push(record);
    previous = record.chainHash as string;
  };
  const checkpoint = () => {
    const last = records[records.length - 1] as VerifyRecord;
    const signed = signCheckpoint(
      { v: 1, chainId, seq: last.seq, chainHash: last.chainHash as string, timeMs: last.ingestTs, term, keyId: key.keyId, nodeId: 'node-1', previousCheckpointHash: previousCheckpoint },
      key.privateKey,
    );
    previousCheckpoint = checkpointHash(signed);
    checkpoints.push(signed);
    append(checkpointEvent(`cp-${last.seq}`, signed));
  };
  append(keyRegistrationEvent(`key-${key.keyId}`, publishKey(key, 'node-1'), 1_700_000_000_000));
  events.forEach((values, i) => {
    append(values);
    if (options.checkpointEvery !== undefined && (i + 1) % options.checkpointEvery === 0) checkpoint();
  });
  if (options.final !== false) checkpoint();
  return { records, checkpoints, key };
}
