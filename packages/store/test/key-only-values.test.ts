// Goal: no write of the store hands LevelDB an empty value. classic-level 3.0.0 copies every value
// it is given into a new buffer and frees the copy only when it is non-empty, so each empty value
// leaked a malloc chunk for good; with the index keys of every event that was about 130 MiB of
// resident memory per million events, on every node. The test watches every value that reaches
// the binding (put, batch, chained batch) while a leader indexes and erases, a standby applies the
// same log, and a store written before its indexes existed has them built when it opens; then it
// reads every value at rest.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeErasureDetails, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { SELF_SOURCE, type AuditEvent, type StoredEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { AuditStore } from '../src/index.js';
import { PREFIX, localKey, prefixEnd } from '../src/event-keys.js';
import { INDEX_PREFIX } from '../src/index-keys.js';
import { STALE_SKETCH_PREFIX } from '../src/text-sketch-writer.js';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-key-only-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function ev(eventId: string, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return {
    eventId,
    userId: `user-${eventId}`,
    source: 'trino',
    action: 'data:Select',
    resource: 'hive.sales.orders',
    decision: 'ALLOW',
    tables: ['hive.sales.orders', `hive.sales.t_${eventId}`],
    query: `SELECT * FROM t_${eventId}`,
    details: '',
    timestamp: 1_700_000_000_000,
    ...overrides,
  };
}

type Written = { key: string; value: string | Uint8Array };

/**
 * Records every key and value that reaches classic-level's native writes (its put, its batch and
 * its chained batch's put; the spies call through), until the test ends.
 */
async function watchWrites(dir: string): Promise<() => Written[]> {
  // The chained batch's class is not exported: its prototype is taken from one instance.
  const probe = new Level<string, string>(join(dir, 'probe'));
  await probe.open();
  const chained = probe.batch();
  const chainedPrototype = Object.getPrototypeOf(chained) as { _put: (key: string, value: string | Uint8Array) => void };
  await chained.close();
  await probe.close();
  const levelPrototype = Level.prototype as unknown as {
    _put: (key: string, value: string | Uint8Array, options: unknown) => Promise<void>;
    _batch: (operations: Array<{ type: string; key: string; value?: string | Uint8Array }>, options: unknown) => Promise<void>;
  };
  const put = vi.spyOn(levelPrototype, '_put');
  const batch = vi.spyOn(levelPrototype, '_batch');
  const chainedPut = vi.spyOn(chainedPrototype, '_put');
  onTestFinished(() => {
    put.mockRestore();
    batch.mockRestore();
    chainedPut.mockRestore();
  });
  return () => [
    ...put.mock.calls.map(([key, value]) => ({ key: String(key), value })),
    ...batch.mock.calls.flatMap(([operations]) => operations.flatMap((op) => (op.type === 'put' ? [{ key: String(op.key), value: op.value as string | Uint8Array }] : []))),
    ...chainedPut.mock.calls.map(([key, value]) => ({ key: String(key), value })),
  ];
}

const isEmpty = (value: string | Uint8Array) => (typeof value === 'string' ? value.length === 0 : value.byteLength === 0);

async function eraseUserOf(store: AuditStore, eventId: string): Promise<void> {
  const target = (await store.getByEventId(eventId)) as StoredEvent;
  const details = encodeErasureDetails({ v: 1, fields: ['userId'], records: [{ eventId, seq: target.seq }] });
  await store.append([{ ...ev(`erase-${eventId}`), userId: 'admin', source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
}

/** Deletes a closed store's secondary indexes, erasure index and the marks that say they are complete, as a store written before them. */
async function dropIndexes(where: string): Promise<void> {
  const db = new Level<string, string>(where);
  await db.open();
  try {
    const keys = [
      ...(await db.keys({ gte: INDEX_PREFIX, lt: prefixEnd(INDEX_PREFIX) }).all()),
      ...(await db.keys({ gte: PREFIX.erasure, lt: prefixEnd(PREFIX.erasure) }).all()),
      localKey('indexVersion'),
      localKey('erasureIndex'),
    ];
    await db.batch(keys.map((key) => ({ type: 'del' as const, key })));
  } finally {
    await db.close();
  }
}

/** Every key of a closed store whose value is empty. */
async function emptyValuedKeys(where: string): Promise<string[]> {
  const db = new Level<string, string>(where);
  await db.open();
  try {
    const empty: string[] = [];
    for await (const [key, value] of db.iterator()) if (value.length === 0) empty.push(key);
    return empty;
  } finally {
    await db.close();
  }
}

describe('values written to LevelDB', () => {
  it('are never empty: ingest, erasure, a standby applying the log and an index backfill write key-only entries with a value', async () => {
    const dir = await tempDir();
    const writes = await watchWrites(dir);
    const leaderAt = join(dir, 'leader');
    const leader = await AuditStore.open({ location: leaderAt });
    const standby = await AuditStore.open({ location: join(dir, 'standby') });
    await leader.append([ev('a'), ev('b', { decision: 'DENY' }), ev('c', { action: 'data:Insert' })]);
    await eraseUserOf(leader, 'a');
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 100));
    await standby.close();
    await leader.close();
    await dropIndexes(leaderAt);
    const reopened = await AuditStore.open({ location: leaderAt });
    const found: string[] = [];
    for await (const event of reopened.search({ action: 'all', user: 'user-b' })) found.push(event.eventId);
    expect(found).toEqual(['b']);
    expect(await reopened.searchPlan({ action: 'all', user: 'user-b' })).toContain('user');
    await reopened.close();

    const written = writes();
    // Each kind of key-only entry was written (the test would pass vacuously otherwise): index
    // keys by ingest, replication and backfill, the erasure index, a stale-sketch mark.
    const count = (prefix: string) => written.filter((write) => write.key.startsWith(prefix)).length;
    expect(count(INDEX_PREFIX)).toBeGreaterThanOrEqual(3 * 3 * 4);
    expect(count(PREFIX.erasure)).toBeGreaterThanOrEqual(3);
    expect(count(STALE_SKETCH_PREFIX)).toBeGreaterThanOrEqual(1);
    expect(written.filter((write) => isEmpty(write.value)).map((write) => write.key)).toEqual([]);
    expect(await emptyValuedKeys(leaderAt)).toEqual([]);
    expect(await emptyValuedKeys(join(dir, 'standby'))).toEqual([]);
  });
});
