// Goal: retention never deletes an erasure record before every tier location has applied it. A
// pass that did not run — an earlier target that could not be reached, a rewrite stopped between
// the batch's commit and its own — must still find the record in the local log afterwards, even
// with local retention at 0 days; once every location applied it, retention deletes it too.
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { erasureDetailsChunks } from '@auditlake/integrity';
import { S3Connections, ERASURES_APPLIED_THROUGH_PROPERTY, loadIcebergTable, resolveIcebergTable } from '@auditlake/lake';
import { useEmbeddedS3 } from '@auditlake/lake/testing';
import { defaultSettings, encodeEvent, INTEGRITY_ACTIONS, parseSettings, resolveConfig, SELF_SOURCE, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ERASURES_APPLIED_META, firstUnappliedErasureSeq, localCleanupPolicy, type TierErasureResult, type TierSweeperOptions } from '../src/index.js';
import { testSweeper } from './test-sweeper.js';
import { duckdbOverLiveParquet } from './live-parquet.js';

const BUCKET = 'erasure-retention';
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALERASERETENTION0001', secretAccessKey: 'erasure-retention-secret-0123456789abc' };
const CATALOGS = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 'b' }]]);
const s3 = useEmbeddedS3('erasure-retention-', BUCKET, CREDENTIALS);
/** Both connections work (the fixture's own has only `s3`, which these tests do not use). */
let working: S3Connections;
/** Connection `a` signs with a wrong secret (every request refused); `b` works. */
let aRefused: S3Connections;

function connections(aSecret: string): S3Connections {
  const config = (id: string, secretAccessKey: string) => ({ id, endpoint: s3.server.url, region: 'us-east-1', accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey, forcePathStyle: true });
  return new S3Connections(
    new Map([
      ['a', config('a', aSecret)],
      ['b', config('b', CREDENTIALS.secretAccessKey)],
    ]),
  );
}

beforeAll(() => {
  working = connections(CREDENTIALS.secretAccessKey);
  aRefused = connections('not-the-secret-0123456789abcdefghijklmn');
});

afterAll(() => {
  working?.close();
  aRefused?.close();
});

/** Local retention at 0 days: every tiered event may go at once, unless the policy keeps it. */
function settings(over: Record<string, string>): EffectiveSettings {
  return parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.retain.local.days': '0', ...over });
}

function ev(i: number): AuditEvent {
  return { eventId: `e${i}`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: `select ${i}`, details: '', timestamp: Date.UTC(2026, 0, 1) + i };
}

/** A store holding events e0…e<count-1>, whose clock is an hour back, so every event is settled for the sweep at once. */
async function openStore(count: number): Promise<AuditStore> {
  const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => Date.now() - HOUR_MS });
  onTestFinished(() => store.close());
  await store.append(Array.from({ length: count }, (_, i) => ev(i)));
  return store;
}

/** Appends the erasure record of `query` of the event `eventId` at `seq`, as the erase API does; answers its seq. */
async function erase(store: AuditStore, eventId: string, seq: number): Promise<number> {
  const [details] = erasureDetailsChunks(['query'], [{ eventId, seq }]);
  const record: AuditEvent = { eventId: `erase-${eventId}`, userId: 'admin', source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, resource: 'events:1', decision: '', tables: [], query: '', details: details as string, timestamp: Date.UTC(2026, 0, 2) };
  const result = await store.appendEncoded([encodeEvent(record)]);
  return result.stored[0]!.seq;
}

/** Runs retention as every node does: the policy of the settings, the replicated watermark and the unapplied erasure records. */
async function prune(store: AuditStore, current: EffectiveSettings): Promise<void> {
  const watermark = (await store.getMeta<{ seq: number }>('tierWatermark'))?.seq ?? 0;
  const policy = localCleanupPolicy(current, watermark, Date.now(), await firstUnappliedErasureSeq(store));
  await store.pruneBefore(policy.cutoffMs, 100, async () => true, policy.maxSeq);
}

/** DuckDB over the live files of a Parquet location: the query column of `eventId`. */
async function parquetQueryOf(path: string, eventId: string): Promise<string[]> {
  const rows = await duckdbOverLiveParquet(working, { path, connectionId: 'a' }, s3.dir, `SELECT query FROM {files} WHERE event_id = '${eventId}'`);
  return rows.map((row) => row['query'] as string);
}

function sweeperOf(store: AuditStore, current: () => EffectiveSettings, over: Partial<TierSweeperOptions>) {
  return testSweeper({ store, connections: working, catalogs: CATALOGS, settings: current, ...over });
}

describe('retention and erasure records', () => {
  it('keeps an erasure record an earlier target could not apply, retried after a backoff, until a later pass has applied it there', async () => {
    const store = await openStore(10);
    const pathA = `s3://${BUCKET}/first`;
    let current = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': pathA, 'audit.tier.connectionId': 'a' });
    expect(await sweeperOf(store, () => current, {}).sweep()).toBe('tiered');

    // The target moves to another location; e3 (seq 4) lives only in the first one's files.
    current = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/second`, 'audit.tier.connectionId': 'b' });
    await store.append(Array.from({ length: 5 }, (_, i) => ev(10 + i)));
    const erasureSeq = await erase(store, 'e3', 4);

    // The first location refuses every request: the current target tiers and applies, the earlier one fails.
    let nowMs = Date.now();
    const failures: number[] = [];
    const refused = sweeperOf(store, () => current, {
      connections: aRefused,
      now: () => nowMs,
      log: { info: () => undefined, warn: (obj) => void ('failures' in obj && failures.push(obj.failures as number)) },
    });
    expect(await refused.sweep()).toBe('tiered');
    expect(failures).toEqual([1]);
    expect(await firstUnappliedErasureSeq(store)).toBe(erasureSeq);
    // Not asked again by every sweep: only once its backoff (an hour) has passed.
    await store.append([ev(15)]);
    expect(await refused.sweep()).toBe('tiered');
    expect(failures).toEqual([1]);
    nowMs += HOUR_MS;
    expect(await refused.sweep()).toBe('nothing-to-tier');
    expect(failures).toEqual([1, 2]);
    expect(await firstUnappliedErasureSeq(store)).toBe(erasureSeq);
    await prune(store, current);
    expect(await store.getBySeq(1)).toBeUndefined();
    expect(await store.getBySeq(erasureSeq - 1)).toBeUndefined();
    expect((await store.getBySeq(erasureSeq))?.eventId).toBe('erase-e3');
    expect(await parquetQueryOf(pathA, 'e3')).toEqual(['select 3']);

    // A later leader reaches it: the record, still local, is applied; then retention takes it too.
    expect(await sweeperOf(store, () => current, {}).sweep()).toBe('nothing-to-tier');
    const [erased] = await parquetQueryOf(pathA, 'e3');
    expect(erased).not.toBe('select 3');
    expect(await store.getMeta<number>(ERASURES_APPLIED_META)).toBe(store.position.lastSeq);
    expect(await firstUnappliedErasureSeq(store)).toBeUndefined();
    await prune(store, current);
    expect(await store.getBySeq(erasureSeq)).toBeUndefined();
  });

  it('applies an erasure record an earlier target missed when that target becomes the current one again', async () => {
    const store = await openStore(10);
    const pathA = `s3://${BUCKET}/back-a`;
    const atA = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': pathA, 'audit.tier.connectionId': 'a' });
    const atB = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/back-b`, 'audit.tier.connectionId': 'b' });
    expect(await sweeperOf(store, () => atA, {}).sweep()).toBe('tiered');
    // Tiering moves to B; e3's erasure is tiered there while A refuses every request.
    await store.append([ev(10)]);
    await erase(store, 'e3', 4);
    expect(await sweeperOf(store, () => atB, { connections: aRefused }).sweep()).toBe('tiered');
    expect(await parquetQueryOf(pathA, 'e3')).toEqual(['select 3']);
    // Back to A, now reachable: A is no earlier target any more, and its own commits do not hold
    // the erasure record, yet its rows are rewritten.
    await store.append([ev(11)]);
    expect(await sweeperOf(store, () => atA, {}).sweep()).toBe('tiered');
    const [erased] = await parquetQueryOf(pathA, 'e3');
    expect(erased).not.toBe('select 3');
    expect(await firstUnappliedErasureSeq(store)).toBeUndefined();
  });

  it('keeps an erasure record whose rewrite stopped after its batch was committed, until the next sweep has applied it', async () => {
    const store = await openStore(10);
    const current = settings({ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'cat.ops.stopped_rewrite' });
    expect(await sweeperOf(store, () => current, {}).sweep()).toBe('tiered');
    const erasureSeq = await erase(store, 'e3', 4);

    // The batch holding the erasure record commits; the rewrite of e3's file stops before its commit (a crash there).
    const stopped = sweeperOf(store, () => current, {
      onStep: (step) => {
        if (step === 'rewrite-written') throw new Error('stopped before the rewrite commit');
      },
    });
    expect(await stopped.sweep()).toBe('failed');
    expect((await stopped.watermark()).seq).toBe(erasureSeq);
    expect(await firstUnappliedErasureSeq(store)).toBe(erasureSeq);
    await prune(store, current);
    expect(await store.getBySeq(erasureSeq - 1)).toBeUndefined();
    expect((await store.getBySeq(erasureSeq))?.eventId).toBe('erase-e3');

    // The next sweep finds the record where it looks for it and rewrites the row.
    const passes: TierErasureResult[] = [];
    expect(await sweeperOf(store, () => current, { onErased: (result) => passes.push(result) }).sweep()).toBe('nothing-to-tier');
    expect(passes.map((p) => [p.erasures, p.rowsRewritten])).toEqual([[1, 1]]);
    const table = resolveIcebergTable('cat.ops.stopped_rewrite', CATALOGS);
    const loaded = await loadIcebergTable(working.bucket('b', BUCKET), table);
    expect(loaded?.metadata.properties[ERASURES_APPLIED_THROUGH_PROPERTY]).toBe(String(erasureSeq));
    expect(await firstUnappliedErasureSeq(store)).toBeUndefined();
    await prune(store, current);
    expect(await store.getBySeq(erasureSeq)).toBeUndefined();
  });

  it('applies an erasure to a place named two ways through the description that works, whatever the other one does', async () => {
    const store = await openStore(10);
    const placeX = `s3://${BUCKET}/named-twice`;
    // Tiered to X through connection a, then (credentials rotated) through b: one place, two descriptions.
    let current = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': placeX, 'audit.tier.connectionId': 'a' });
    expect(await sweeperOf(store, () => current, {}).sweep()).toBe('tiered');
    await store.append(Array.from({ length: 5 }, (_, i) => ev(10 + i)));
    current = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `${placeX}/`, 'audit.tier.connectionId': 'b' });
    expect(await sweeperOf(store, () => current, {}).sweep()).toBe('tiered');
    // The target moves on; e3 lives only in X. Connection a's key is then revoked, a left configured.
    current = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/after-x`, 'audit.tier.connectionId': 'b' });
    await erase(store, 'e3', 4);
    const warnings: string[] = [];
    await sweeperOf(store, () => current, { connections: aRefused, log: { info: () => undefined, warn: (_obj, msg) => void warnings.push(msg) } }).sweep();
    // The description through a fails (and is retried later); the one through b applied it.
    expect(warnings.some((w) => w.startsWith(`Audit tiering: applying erasures to ${placeX}, an earlier tier target, failed`))).toBe(true);
    expect(await parquetQueryOf(placeX, 'e3')).toEqual(['[erased by auditlake]']);
  });

  it('does not wait for an earlier target whose S3 connection was removed from the configuration', async () => {
    const store = await openStore(10);
    const withC = new S3Connections(new Map([['c', { id: 'c', endpoint: s3.server.url, region: 'us-east-1', ...CREDENTIALS, forcePathStyle: true }]]));
    onTestFinished(() => withC.close());
    let current = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/detached`, 'audit.tier.connectionId': 'c' });
    expect(await sweeperOf(store, () => current, { connections: withC }).sweep()).toBe('tiered');

    // The operator moves to connection b and drops c from the configuration.
    current = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/kept`, 'audit.tier.connectionId': 'b' });
    const erasureSeq = await erase(store, 'e3', 4);
    const warnings: string[] = [];
    expect(await sweeperOf(store, () => current, { log: { info: () => undefined, warn: (_obj, msg) => void warnings.push(msg) } }).sweep()).toBe('tiered');
    expect(warnings).toEqual([`Audit tiering: erasures are not applied to s3://${BUCKET}/detached, an earlier tier target: its S3 connection 'c' is no longer configured`]);
    expect(await store.getMeta<number>(ERASURES_APPLIED_META)).toBe(erasureSeq);
    expect(await firstUnappliedErasureSeq(store)).toBeUndefined();
  });

  it('keeps nothing back when no location was ever tiered to, or every erasure record is applied', async () => {
    const store = await openStore(2);
    await erase(store, 'e0', 1);
    expect(await firstUnappliedErasureSeq(store)).toBeUndefined();
    const none = settings({ 'audit.tier.mode': 'none' });
    expect(localCleanupPolicy(none, 0, Date.now(), undefined).maxSeq).toBeUndefined();
    expect(localCleanupPolicy(none, 0, Date.now(), 3).maxSeq).toBe(2);
    const parquet = settings({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/x`, 'audit.tier.connectionId': 'b' });
    expect(localCleanupPolicy(parquet, 9, Date.now(), 3).maxSeq).toBe(2);
    expect(localCleanupPolicy(parquet, 1, Date.now(), 3).maxSeq).toBe(1);
  });
});
