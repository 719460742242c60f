// Goal: after an erasure's row rewrite, the purge leaves no object in the bucket that holds an
// erased value — also when another engine tagged a snapshot from before the rewrite (the tag is
// dropped: it would keep that snapshot and its files), and when the process dies right after
// the expiry's commit (what the expiry was to delete is named in purge-files first, so the next
// pass deletes it) — and icebird still reads every event exactly once.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { useEmbeddedS3 } from '../src/testing/index.js';
import {
  commitIcebergBatch,
  compactIcebergTable,
  commitMetadataVersion,
  ensureIcebergTable,
  loadIcebergTable,
  PURGE_FILES_PROPERTY,
  purgeReplacedFiles,
  resolveIcebergTable,
  rewriteIcebergRows,
  type IcebergTableRef,
  type LoadedTable,
  type MaintenanceContext,
  type ObjectStore,
} from '../src/index.js';
import { ManifestCache, snapshotReach } from '../src/iceberg-table-files.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALERASUREPURGETEST01', secretAccessKey: 'erasure-purge-secret-0123456789abcdef' };
const s3 = useEmbeddedS3('iceberg-erasure-purge-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };
const MARKER = '[erased by auditlake]';
/** The value erased: random-looking, so compression keeps it literal in every file that holds it. */
const SECRET = 'c41f9a0e77d2b86f3e5a1c9d';

function events(firstSeq: number, count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: `u${seq % 3}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: seq === 2 ? SECRET : `q${seq}`, details: '', timestamp: T0 + seq, ingestTs: T0 + seq, seq, term: 1 };
  });
}

/** A table with three sweep commits of five events; seq 2's query is the secret. */
async function table(name: string): Promise<{ table: IcebergTableRef; objects: ObjectStore; loaded: LoadedTable }> {
  const ref = resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
  const objects = s3.connections.bucket('s3', BUCKET);
  let loaded = await ensureIcebergTable(objects, ref, T0);
  for (let c = 0; c < 3; c++) {
    await commitIcebergBatch(objects, ref, loaded, events(1 + c * 5, 5), { ...fence, nowMs: Date.now(), writerId: 'test' });
    loaded = (await loadIcebergTable(objects, ref))!;
  }
  return { table: ref, objects, loaded };
}

function context(ref: IcebergTableRef, objects: ObjectStore, over: Partial<MaintenanceContext> = {}): MaintenanceContext {
  return { objects, table: ref, fence, now: Date.now, metadataLogEntriesMax: 100, ...over };
}

/** The rewrite an erasure of seq 2's query makes. */
const ERASE_QUERY_OF_SEQ_2 = { seqs: [2], rewrite: (row: { seq?: number | undefined; query?: string | undefined }) => (row.seq === 2 && row.query !== MARKER ? { ...row, query: MARKER } : undefined), properties: {} };

/** The embedded endpoint's file for an object URL (`s3://bucket/key`). */
function objectFile(url: string): string {
  return join(s3.dir, 's3', `${url.replace(/^s3:\/\//, '')}._S3rver_object`);
}

/** Every file of table `name` in the embedded endpoint's directory that holds `text`. */
async function filesHolding(name: string, text: string): Promise<string[]> {
  const holding: string[] = [];
  for (const entry of await readdir(join(s3.dir, 's3'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.parentPath.includes(`/${name}/`)) continue;
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path)).includes(text)) holding.push(path);
  }
  return holding;
}

describe('the purge after an erasure\'s row rewrite', () => {
  it('drops a tag another engine put on a snapshot from before the rewrite, and leaves no file holding the value', async () => {
    const { table: ref, objects, loaded } = await table('tagged');
    const first = loaded.metadata.snapshots[0]!['snapshot-id'];
    // Another engine tags the first snapshot (which names the file holding the secret).
    const tagged = await commitMetadataVersion(objects, ref, loaded, { ...loaded.metadata, refs: { ...loaded.metadata.refs, audit2025: { 'snapshot-id': first, type: 'tag' } }, 'last-updated-ms': loaded.metadata['last-updated-ms'] + 1 }, fence);
    expect((await filesHolding(ref.identifier.split('.').at(-1)!, SECRET)).length).toBeGreaterThan(0);
    const rewritten = await rewriteIcebergRows(context(ref, objects), tagged, ERASE_QUERY_OF_SEQ_2 as never);
    expect(rewritten.rowsRewritten).toBe(1);
    const purged = await purgeReplacedFiles(context(ref, objects), rewritten.loaded);
    expect(Object.keys(purged.loaded.metadata.refs)).toEqual(['main']);
    expect(purged.loaded.metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([purged.loaded.metadata['current-snapshot-id']]);
    expect(purged.loaded.metadata.properties[PURGE_FILES_PROPERTY]).toBeUndefined();
    expect(await filesHolding(ref.identifier.split('.').at(-1)!, SECRET)).toEqual([]);
  });

  it('killed right after the expiry\'s commit, leaves what the expiry was to delete named in purge-files; the next pass deletes it', async () => {
    const { table: ref, objects, loaded } = await table('crashed');
    // A compaction first: the files it replaced hold the value and are reached only by the snapshots before it.
    const compacted = await compactIcebergTable(context(ref, objects), loaded, 16 * 1024 * 1024);
    expect(compacted.filesRewritten).toBe(3);
    const rewritten = await rewriteIcebergRows(context(ref, objects), compacted.loaded, ERASE_QUERY_OF_SEQ_2 as never);
    // The process "dies" when the expiry has committed, before it deletes anything.
    const dying = context(ref, objects, {
      onStep: async (step) => {
        if (step === 'expiry-committed') throw new Error('killed');
      },
    });
    await expect(purgeReplacedFiles(dying, rewritten.loaded)).rejects.toThrow('killed');
    const left = (await loadIcebergTable(objects, ref))!;
    expect(left.metadata.snapshots).toHaveLength(1);
    // The older snapshots' files still hold the value, and the table still names every one of them.
    const stillHolding = await filesHolding(ref.identifier.split('.').at(-1)!, SECRET);
    expect(stillHolding.length).toBeGreaterThan(0);
    const named = JSON.parse(left.metadata.properties[PURGE_FILES_PROPERTY]!) as string[];
    // The file the compaction replaced among them, besides the compacted file the rewrite replaced.
    expect(stillHolding.length).toBe(2);
    for (const path of stillHolding) expect(named.some((url) => path.endsWith(`${url.replace(/^s3:\/\//, '')}._S3rver_object`))).toBe(true);
    // The next pass finishes the job.
    const purged = await purgeReplacedFiles(context(ref, objects), left);
    expect(purged.loaded.metadata.properties[PURGE_FILES_PROPERTY]).toBeUndefined();
    expect(await filesHolding(ref.identifier.split('.').at(-1)!, SECRET)).toEqual([]);
  });

  it('keeps every file a snapshot still reads when another engine tags an old snapshot while the purge expires (those files keep their values)', async () => {
    const { table: ref, objects, loaded } = await table('raced');
    const rewritten = await rewriteIcebergRows(context(ref, objects), loaded, ERASE_QUERY_OF_SEQ_2 as never);
    const first = rewritten.loaded.metadata.snapshots[0]!['snapshot-id'];
    // Another engine tags the first snapshot (its file holds the secret) just as the expiry
    // commits: it takes that version, so the expiry reloads, keeps the tagged snapshot and
    // deletes only what no kept snapshot reads, though the purge had listed that file and the
    // first snapshot's manifest list and manifests before the tag existed.
    let raced = false;
    const racing = new Proxy(objects, {
      get(target, name) {
        if (name === 'putIfAbsent') {
          return async (key: string, body: Uint8Array | string, contentType: string) => {
            const metadata = typeof body === 'string' && key.endsWith('.metadata.json') ? (JSON.parse(body) as { snapshots: unknown[]; properties: Record<string, string> }) : undefined;
            if (!raced && metadata !== undefined && metadata.snapshots.length === 1 && metadata.properties[PURGE_FILES_PROPERTY] !== undefined) {
              raced = true;
              const latest = (await loadIcebergTable(objects, ref))!;
              const refs = { ...latest.metadata.refs, audit2025: { 'snapshot-id': first, type: 'tag' as const } };
              await commitMetadataVersion(objects, ref, latest, { ...latest.metadata, refs, 'last-updated-ms': latest.metadata['last-updated-ms'] + 1 }, fence);
            }
            return target.putIfAbsent(key, body, contentType);
          };
        }
        const value = Reflect.get(target, name, target) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const purged = await purgeReplacedFiles(context(ref, racing), rewritten.loaded);
    expect(raced).toBe(true);
    const metadata = purged.loaded.metadata;
    expect(metadata.refs['audit2025']?.['snapshot-id']).toBe(first);
    expect(metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([first, metadata['current-snapshot-id']]);
    expect(metadata.properties[PURGE_FILES_PROPERTY]).toBeUndefined();
    // Every object either kept snapshot reads is still there: the tag still reads its table.
    const cache = new ManifestCache();
    const read = new Set<string>();
    for (const snapshot of metadata.snapshots) await snapshotReach(objects, ref, snapshot, cache, read, true);
    const present = new Set<string>();
    for (const entry of await readdir(join(s3.dir, 's3'), { recursive: true, withFileTypes: true })) if (entry.isFile()) present.add(join(entry.parentPath, entry.name));
    for (const url of read) expect(present.has(objectFile(url)), url).toBe(true);
    // The secret is left only where the tagged snapshot reads it; the second and third
    // snapshots' manifest lists, which only expired snapshots reached, are gone.
    const holding = await filesHolding('raced', SECRET);
    expect(holding.length).toBeGreaterThan(0);
    for (const path of holding) expect([...read].map(objectFile)).toContain(path);
    for (const snapshot of rewritten.loaded.metadata.snapshots.slice(1, 3)) expect(present.has(objectFile(snapshot['manifest-list']))).toBe(false);
  });
});
