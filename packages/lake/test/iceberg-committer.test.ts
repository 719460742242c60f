// Goal: a sweep commit on a table version whose manifest list is gone re-applies on the table as it now is when the table moved on (snapshot expiry), and fails naming the list when it did not (a list removed by hand), committing nothing.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditParquetFile, currentSchema, currentSnapshot, newTableMetadata, parseTableMetadata, updateProperties } from '@auditlake/format';
import type { StoredEvent } from '@auditlake/model';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commitIcebergBatch,
  currentManifests,
  ensureIcebergTable,
  ensureNamespace,
  expireIcebergSnapshots,
  IcebergTierSource,
  loadIcebergTable,
  metadataVersionKey,
  putVersionHint,
  resolveIcebergTable,
  s3Key,
  S3Connections,
  tableWatermark,
  type IcebergTableRef,
  type LoadedTable,
  type ObjectStore,
} from '../src/index.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 4, 1);

let server: S3rver;
let dir: string;
let connections: S3Connections;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'iceberg-committer-'));
  server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true, configureBuckets: [{ name: BUCKET }], vhostBuckets: false });
  const { port } = await server.run();
  connections = new S3Connections(new Map([['s3', { id: 's3', endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', forcePathStyle: true }]]));
});

afterAll(async () => {
  connections?.close();
  server?.httpServer?.closeAllConnections();
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

function batch(from: number, to: number): StoredEvent[] {
  return Array.from({ length: to - from + 1 }, (_, i) => {
    const seq = from + i;
    return { eventId: `e${seq}`, userId: 'alice', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: 'q', details: '', timestamp: T0 + seq, ingestTs: T0 + seq, seq, term: 1 };
  });
}

async function table(name: string) {
  const ref = resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
  const objects = connections.bucket('s3', BUCKET);
  await ensureNamespace(connections, ref);
  await ensureIcebergTable(objects, ref, T0);
  const rows = async () => (await currentManifests(objects, ref, (await loadIcebergTable(objects, ref))!.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2)).reduce((n, e) => n + e.data_file.record_count, 0);
  return { ref, objects, rows };
}

const context = { term: 1, nowMs: T0, writerId: 'test', mayCommit: () => true };

describe('commitIcebergBatch on a version whose manifest list is gone', () => {
  it('re-applies the batch on the current table when snapshot expiry removed the list since the version was read', async () => {
    const { ref, objects, rows } = await table('expired');
    await commitIcebergBatch(objects, ref, (await loadIcebergTable(objects, ref))!, batch(1, 3), context);
    const stale = (await loadIcebergTable(objects, ref))!;
    await commitIcebergBatch(objects, ref, stale, batch(4, 6), context);
    const expired = await expireIcebergSnapshots({ objects, table: ref, fence: { term: 1, mayCommit: () => true }, now: () => T0, metadataLogEntriesMax: 100 }, (await loadIcebergTable(objects, ref))!, 1);
    expect(expired.snapshotsExpired).toBe(1);
    expect(await objects.exists(s3Key(ref, currentSnapshot(stale.metadata)!['manifest-list']))).toBe(false);
    // Built on the stale version (read before the batch of 4..6), continuing from seq 6.
    const result = await commitIcebergBatch(objects, ref, stale, batch(7, 9), { ...context, afterSeq: 6 });
    expect(result.version).toBe(expired.loaded.version + 1);
    expect(tableWatermark(await loadIcebergTable(objects, ref))?.seq).toBe(9);
    expect(await rows()).toBe(9);
  });

  it('fails naming the list, and commits nothing, when the table has not moved (the list was removed by hand)', async () => {
    const { ref, objects } = await table('removed');
    await commitIcebergBatch(objects, ref, (await loadIcebergTable(objects, ref))!, batch(1, 3), context);
    const loaded = (await loadIcebergTable(objects, ref))!;
    const list = currentSnapshot(loaded.metadata)!['manifest-list'];
    await objects.delete(s3Key(ref, list));
    await expect(commitIcebergBatch(objects, ref, loaded, batch(4, 6), context)).rejects.toThrow(`the manifest list ${list} of v${loaded.version}'s current snapshot is gone`);
    expect((await loadIcebergTable(objects, ref))!.version).toBe(loaded.version);
  });
});

/**
 * Another engine's commits on `base`, each a properties-only change as its UpdateProperties
 * writes, then its metadata cleanup: versions up to `deleteThrough` deleted, the hint at its
 * newest unless `moveHint` is false.
 */
async function outsideCommits(objects: ObjectStore, ref: IcebergTableRef, base: LoadedTable, count: number, deleteThrough: number, moveHint = true): Promise<number> {
  let current = base;
  for (let i = 1; i <= count; i++) {
    const next = updateProperties(current.metadata, { set: { 'outside.commit': String(i) }, nowMs: current.metadata['last-updated-ms'] + 1, previousMetadataPath: current.metadataPath })!;
    const version = current.version + 1;
    await objects.put(metadataVersionKey(ref, version), JSON.stringify(next), 'application/json');
    current = { version, metadata: next, metadataPath: objects.url(metadataVersionKey(ref, version)) };
  }
  for (let version = base.version + 1; version <= deleteThrough; version++) await objects.delete(metadataVersionKey(ref, version));
  if (moveHint) await putVersionHint(objects, ref, current.version);
  return current.version;
}

describe('commitIcebergBatch on a version read before another engine committed and deleted old versions', () => {
  it.each([
    ['the hint moved on', true],
    ['the hint left behind, the next version still there', false],
  ])('does not commit beside the table but re-applies the batch on it (%s)', async (_, moveHint) => {
    const { ref, objects, rows } = await table(`forked-${moveHint}`);
    // As a sweep reuses it for its next, back-to-back commit: the table its commit left.
    const { loaded: kept } = await commitIcebergBatch(objects, ref, (await loadIcebergTable(objects, ref))!, batch(1, 3), context);
    // The other engine commits three times and its cleanup deletes the first of them: the
    // version number a commit on `kept` would create.
    const newest = await outsideCommits(objects, ref, kept, 3, kept.version + 1, moveHint);
    expect(await objects.exists(metadataVersionKey(ref, kept.version + 1))).toBe(false);

    const result = await commitIcebergBatch(objects, ref, kept, batch(4, 6), { ...context, afterSeq: 3 });
    expect(result.version).toBe(newest + 1);
    const now = (await loadIcebergTable(objects, ref))!;
    expect(now.version).toBe(newest + 1);
    expect(now.metadata.properties['outside.commit']).toBe('3');
    expect(tableWatermark(now)?.seq).toBe(6);
    expect(await rows()).toBe(6);
  });

  it('commits on a version whose successor is built on it', async () => {
    const { ref, objects } = await table('successor');
    const first = await commitIcebergBatch(objects, ref, (await loadIcebergTable(objects, ref))!, batch(1, 3), context);
    // A commit lands on ours between its create and its checks: simulated by answering the
    // check of the next version with a successor built on ours.
    const plain = connections.bucket('s3', BUCKET);
    let successorWritten = false;
    const putIfAbsent = async (key: string, body: string, type: string) => {
      const created = await plain.putIfAbsent(key, body, type);
      if (created && !successorWritten && key === metadataVersionKey(ref, first.version + 1)) {
        successorWritten = true;
        await outsideCommits(plain, ref, { version: first.version + 1, metadata: parseTableMetadata(body), metadataPath: plain.url(key) }, 1, 0);
      }
      return created;
    };
    const racing = new Proxy(plain, {
      get: (target, name) => {
        if (name === 'putIfAbsent') return putIfAbsent;
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const result = await commitIcebergBatch(racing, ref, first.loaded, batch(4, 6), { ...context, afterSeq: 3 });
    expect(successorWritten).toBe(true);
    expect(result.version).toBe(first.version + 1);
    expect(tableWatermark(await loadIcebergTable(objects, ref))?.seq).toBe(6);
  });
});

describe('commitIcebergBatch on a table made before the chain columns', () => {
  it('evolves the schema in the commit and writes the chain columns', async () => {
    const table = resolveIcebergTable('cat.ops.audit', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = connections.bucket('s3', BUCKET);
    await ensureNamespace(connections, table);
    const fresh = newTableMetadata({ location: table.location, tableUuid: '9c6f2b1e-4f0a-4c57-9a1e-2b7d3f1a8c40', nowMs: T0 });
    const oldFields = fresh.schemas[0]!.fields.filter((field) => field.id <= 12);
    const old = { ...fresh, 'last-column-id': 12, schemas: [{ ...fresh.schemas[0]!, fields: oldFields }] };
    await objects.put(metadataVersionKey(table, 1), JSON.stringify(old), 'application/json');
    await putVersionHint(objects, table, 1);

    const batch: StoredEvent[] = [1, 2, 3].map((seq) => ({
      eventId: `e${seq}`, userId: 'alice', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: 'q', details: '',
      timestamp: T0 + seq, ingestTs: T0 + seq, seq, term: 2, recordHash: 'a'.repeat(64), chainHash: 'b'.repeat(64), fieldCheck: 'c'.repeat(56),
    }));
    await commitIcebergBatch(objects, table, (await loadIcebergTable(objects, table))!, batch, { term: 2, nowMs: T0, writerId: 'test', mayCommit: () => true });

    const loaded = (await loadIcebergTable(objects, table))!;
    expect(loaded.version).toBe(2);
    expect(loaded.metadata['current-schema-id']).toBe(1);
    // Evolved to the whole audit schema: the chain columns and the record's salt (id 21).
    expect(loaded.metadata['last-column-id']).toBe(21);
    expect(loaded.metadata.schemas.map((s) => s.fields.length)).toEqual([12, 21]);
    expect(loaded.metadata.snapshots[0]?.['schema-id']).toBe(1);
    expect(currentSchema(loaded.metadata).fields.find((f) => f.name === 'chain_hash')).toMatchObject({ id: 18, required: false, type: 'string' });
    expect(currentSchema(loaded.metadata).fields.find((f) => f.name === 'salt')).toMatchObject({ id: 21, required: false, type: 'string' });

    const source = new IcebergTierSource(connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    const [file] = await source.listFiles();
    const rows = await (await AuditParquetFile.open(await source.open(file!))).read({});
    expect(rows.map((r) => [r.seq, r.term, r.chainHash])).toEqual(batch.map((e) => [e.seq, 2, 'b'.repeat(64)]));
    await source.close();
  });
});
