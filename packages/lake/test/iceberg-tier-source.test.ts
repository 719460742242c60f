// Goal: the Iceberg reader keeps the table's file list between searches only while the table version is unchanged — a new commit (also one whose hint lags) is seen by the next listing — holds only the manifests the listed version names, and opens data files without asking the store for their size.
import type { StoredEvent } from '@auditlake/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitIcebergBatch, ensureIcebergTable, ensureNamespace, IcebergTierSource, joinKey, loadIcebergTable, resolveIcebergTable, runIcebergMaintenance, S3Connections, type ObjectStore } from '../src/index.js';
import { useEmbeddedS3 } from '../src/testing/index.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 4, 1);

/** Connections whose object stores count GETs and HEADs by kind. */
class CountingConnections extends S3Connections {
  readonly calls = { get: 0, getRange: 0, head: 0 };
  override bucket(id: string, bucket: string): ObjectStore {
    const objects = super.bucket(id, bucket);
    const get = objects.get.bind(objects);
    const getRange = objects.getRange.bind(objects);
    const head = objects.head.bind(objects);
    objects.get = (key) => ((this.calls.get += 1), get(key));
    objects.getRange = (key, start, end) => ((this.calls.getRange += 1), getRange(key, start, end));
    objects.head = (key) => ((this.calls.head += 1), head(key));
    return objects;
  }
}

const CREDENTIALS = { accessKeyId: 'ALTIERINGTEST0000001', secretAccessKey: 'tiering-test-secret-0123456789abcdefgh' };
const s3 = useEmbeddedS3('iceberg-tier-source-', BUCKET, CREDENTIALS);
/** Connection `s3` to the endpoint, counting (the fixture's own does not count). */
let connections: CountingConnections;

beforeAll(() => {
  connections = new CountingConnections(s3.connectionConfigs());
});

afterAll(() => {
  connections?.close();
});

function events(firstSeq: number, count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: 'alice', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: 'q', details: '', timestamp: T0 + seq * 60_000, ingestTs: T0 + seq * 60_000, seq, term: 1 };
  });
}

describe('IcebergTierSource', () => {
  it('reuses the listing while the version holds, and sees every new commit, even one the hint has not caught up with', async () => {
    const table = resolveIcebergTable('cat.ops.audit', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = connections.bucket('s3', BUCKET);
    await ensureNamespace(connections, table);
    const context = { term: 1, writerId: 'test', mayCommit: () => true };
    await commitIcebergBatch(objects, table, await ensureIcebergTable(objects, table, T0), events(1, 10), { ...context, nowMs: T0 });

    const source = new IcebergTierSource(connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    const first = await source.listFiles();
    expect(first.reduce((n, f) => n + f.rows, 0)).toBe(10);

    // Unchanged table: the hint and two HEADs, no metadata, manifest list or manifest.
    const before = { ...connections.calls };
    expect(await source.listFiles()).toEqual(first);
    expect(connections.calls.get - before.get).toBe(1);
    expect(connections.calls.head - before.head).toBe(2);

    await commitIcebergBatch(objects, table, (await loadIcebergTable(objects, table))!, events(11, 5), { ...context, nowMs: T0 + 1 });
    expect((await source.listFiles()).reduce((n, f) => n + f.rows, 0)).toBe(15);

    // A commit whose hint write has not happened yet (or failed): put the hint back a version.
    const loaded = (await loadIcebergTable(objects, table))!;
    await commitIcebergBatch(objects, table, loaded, events(16, 7), { ...context, nowMs: T0 + 2 });
    await objects.put(joinKey(table.s3.prefix, 'metadata/version-hint.text'), String(loaded.version), 'text/plain');
    const lagging = await source.listFiles();
    expect(lagging.reduce((n, f) => n + f.rows, 0)).toBe(22);
    // And a fresh source agrees with the cached one.
    const fresh = new IcebergTierSource(connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    expect(await fresh.listFiles()).toEqual(lagging);

    // Metadata damaged in place (not a commit): the cache does not hide it.
    const current = (await loadIcebergTable(objects, table))!;
    await objects.put(joinKey(table.s3.prefix, `metadata/v${current.version}.metadata.json`), '{not json', 'application/json');
    await expect(source.listFiles()).rejects.toThrow();
  });

  it('holds only the manifests of the version it listed last: commits and maintenance never grow it', async () => {
    const table = resolveIcebergTable('cat.ops.held', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = connections.bucket('s3', BUCKET);
    await ensureNamespace(connections, table);
    const context = { term: 1, writerId: 'test', mayCommit: () => true };
    const ref = { identifier: table.identifier, location: table.location, connectionId: 's3' };
    const source = new IcebergTierSource(connections, ref);
    let seq = 1;
    const commit = async (count: number) => {
      await commitIcebergBatch(objects, table, (await loadIcebergTable(objects, table)) ?? (await ensureIcebergTable(objects, table, T0)), events(seq, count), { ...context, nowMs: T0 + seq });
      seq += count;
    };
    for (let i = 0; i < 8; i++) {
      await commit(2);
      await source.listFiles();
    }
    // Each commit added a manifest and kept the others: all eight are current.
    expect(source.manifestsHeld).toBe(8);
    // Maintenance compacts the files and rewrites the manifests, so none of the eight is current.
    const maintenance = { objects, table, fence: { term: 1, mayCommit: () => true }, now: () => T0 + 86_400_000 };
    await runIcebergMaintenance(maintenance, { snapshotRetainLast: 1, removeOrphanFiles: false, orphanMinAgeMs: 1e9, targetFileSizeBytes: 128 << 20, metadataPreviousVersionsMax: 5 });
    for (let i = 0; i < 3; i++) await commit(1);
    const listed = await source.listFiles();
    const fresh = new IcebergTierSource(connections, ref);
    expect(await fresh.listFiles()).toEqual(listed);
    expect(listed.reduce((n, f) => n + f.rows, 0)).toBe(19);
    // What a source that never saw the old versions holds, and not one more.
    expect(fresh.manifestsHeld).toBeLessThan(8);
    expect(source.manifestsHeld).toBe(fresh.manifestsHeld);
    await Promise.all([source.close(), fresh.close()]);
  });

  it('opens a data file with the size the manifest records: ranged GETs, no HEAD', async () => {
    const table = resolveIcebergTable('cat.ops.sizes', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = connections.bucket('s3', BUCKET);
    await ensureNamespace(connections, table);
    await commitIcebergBatch(objects, table, await ensureIcebergTable(objects, table, T0), events(1, 3), { term: 1, writerId: 'test', mayCommit: () => true, nowMs: T0 });
    const source = new IcebergTierSource(connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    const [file] = await source.listFiles();
    const before = { ...connections.calls };
    const opened = await source.open(file!);
    expect(opened.byteLength).toBe((await objects.head(file!.key))!.bytes);
    const tail = new Uint8Array(await opened.slice(opened.byteLength - 4));
    expect(new TextDecoder().decode(tail)).toBe('PAR1');
    expect(connections.calls.head - before.head).toBe(1); // only the check above
    expect(connections.calls.getRange - before.getRange).toBe(1);
  });

  it('close() stops the prefilter workers', async () => {
    const source = new IcebergTierSource(connections, { identifier: 'cat.ops.audit', location: `s3://${BUCKET}/wh/ops/audit`, connectionId: 's3' });
    await source.textProbes.probe(new Uint8Array(0), [], new TextEncoder().encode('x'));
    expect(source.textProbes.threads).toBe(1);
    await source.close();
    expect(source.textProbes.threads).toBe(0);
  });
});
