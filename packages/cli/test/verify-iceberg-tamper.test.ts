// Goal: offline `auditlake verify` of an Iceberg tier names the first break for every way its
// data can be tampered with (the Parquet tier's suite is verify.test.ts): a byte changed in a
// tiered value, a row removed by rewriting its data file, a data file dropped from its manifest,
// two records swapped; and a data file whose manifest entry no longer tells where its rows are
// (another day's partition, narrowed event-time bounds, another row count), which hides rows
// from every reader that skips files by them while each record still verifies. Each tamper of the data is thorough — the manifest's row count and file size, and the
// manifest list's manifest length, are rewritten to match — so only the chain can catch it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  currentSchema,
  currentSnapshot,
  decodeLongBound,
  decodeManifest,
  decodeManifestList,
  encodeAuditParquet,
  encodeLongBound,
  encodeManifest,
  encodeManifestList,
  icebergParquetKvMetadata,
  readAuditParquet,
  TS_FIELD_ID,
  type ManifestEntry,
  type TieredEvent,
} from '@auditlake/format';
import { CHECKPOINT_SUMMARY_KEY, icebergTableAt, loadIcebergTable, S3Connections, s3Key, type IcebergTableRef, type ObjectStore } from '@auditlake/lake';
import { commitForeignSnapshotOnTop } from '@auditlake/lake/testing';
import { resolveConfig } from '@auditlake/model';
import { startAuditNode, type AuditNode, type EmbeddedS3 } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { ingestAll, offlineVerifyOptions, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-iceberg-tamper';
const TABLE_LOCATION = 's3://auditlake/warehouse/audit/events';

let dataDir: string;
let node: AuditNode;
let objects: ObjectStore;
let connections: S3Connections;
let table: IcebergTableRef;

const ingest = (events: Array<Record<string, unknown>>) => ingestAll(node, ADMIN_TOKEN, events);
const offline = () => offlineVerifyOptions(node, ['--table', TABLE_LOCATION]);

function event(i: number): Record<string, unknown> {
  return { eventId: `ev-${i}`, userId: `user-${i % 3}`, source: 'trino', action: 'data:Select', resource: `hive.sales.t${i}`, decision: 'ALLOW', tables: [`hive.sales.t${i}`], query: `SELECT ${i}`, ts: 1_700_000_000_000 + i * 1000 };
}

/** The current snapshot's manifest list and each manifest, decoded, with their keys. */
async function currentFiles() {
  const loaded = (await loadIcebergTable(objects, table))!;
  const snapshot = currentSnapshot(loaded.metadata)!;
  const listKey = s3Key(table, snapshot['manifest-list']);
  const list = decodeManifestList(await objects.get(listKey));
  const manifests = await Promise.all(list.files.map(async (file) => ({ file, key: s3Key(table, file.manifest_path), entries: decodeManifest(await objects.get(s3Key(table, file.manifest_path))).entries })));
  return { loaded, snapshot, listKey, list, manifests };
}

/** Writes the manifests back (entries changed by `edit`) and the manifest list with their new lengths. */
async function rewriteManifests(edit: (entries: ManifestEntry[]) => ManifestEntry[]): Promise<void> {
  const { loaded, snapshot, listKey, list, manifests } = await currentFiles();
  const schema = currentSchema(loaded.metadata);
  const files = [];
  for (const manifest of manifests) {
    const entries = edit(manifest.entries);
    if (entries === manifest.entries) {
      files.push(manifest.file);
      continue;
    }
    const bytes = encodeManifest(entries, { schema });
    await objects.put(manifest.key, bytes);
    files.push({ ...manifest.file, manifest_length: bytes.byteLength });
  }
  await objects.put(listKey, encodeManifestList(files, { snapshotId: snapshot['snapshot-id'], parentSnapshotId: snapshot['parent-snapshot-id'] ?? null, sequenceNumber: snapshot['sequence-number'] }));
  expect(list.files.length).toBe(files.length);
}

/** The live data file holding `seq`, and its rows. */
async function fileWith(seq: number): Promise<{ path: string; rows: TieredEvent[] }> {
  for (const { entries } of (await currentFiles()).manifests) {
    for (const entry of entries) {
      if (entry.status === 2) continue;
      const rows = await readAuditParquet(await objects.byteSource(s3Key(table, entry.data_file.file_path)));
      if (rows.some((row) => row.seq === seq)) return { path: entry.data_file.file_path, rows };
    }
  }
  throw new Error(`no live data file holds seq ${seq}`);
}

/** Rewrites a data file with other rows, and its manifest entry's row count and size with it. */
async function rewriteDataFile(path: string, rows: TieredEvent[]): Promise<void> {
  const loaded = (await loadIcebergTable(objects, table))!;
  const bytes = encodeAuditParquet(rows, { kvMetadata: icebergParquetKvMetadata(currentSchema(loaded.metadata)) });
  await objects.put(s3Key(table, path), bytes);
  await rewriteManifests((entries) =>
    entries.some((e) => e.data_file.file_path === path)
      ? entries.map((e) => (e.data_file.file_path === path ? { ...e, data_file: { ...e.data_file, record_count: rows.length, file_size_in_bytes: bytes.byteLength } } : e))
      : entries,
  );
}

/** Every object under the table, to put back after a tamper. */
async function snapshotTable(): Promise<Map<string, Uint8Array>> {
  const saved = new Map<string, Uint8Array>();
  for (const key of await objects.list(`${table.s3.prefix}/`)) saved.set(key, await objects.get(key));
  return saved;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'auditlake-iceberg-tamper-'));
  node = await startAuditNode({
    dataDir,
    host: '127.0.0.1',
    port: 0,
    embeddedS3Port: 0,
    adminToken: ADMIN_TOKEN,
    logger: false,
    config: resolveConfig(
      new Map(
        Object.entries({
          'auditlake.audit.tier.mode': 'iceberg',
          'auditlake.audit.tier.iceberg.table': 'local.audit.events',
          'auditlake.audit.tier.interval.ms': '100',
          'auditlake.audit.tier.ingest.settle.ms': '0',
          'auditlake.audit.tier.batch.size': '7',
          // The tamper cases edit and put back the tier's objects: a scheduled maintenance run
          // (hourly, at minute 0) compacting them meanwhile left a tier the restore could not
          // put back (CI crossed 12:00 here).
          'auditlake.audit.tier.maintenance.enabled': 'false',
          'auditlake.audit.integrity.checkpoint.events': '1000000',
          'auditlake.audit.integrity.checkpoint.interval.ms': '3600000',
        }),
      ),
    ),
  });
  const embedded = node.embeddedS3 as EmbeddedS3;
  connections = new S3Connections(
    new Map([
      ['t', { id: 't', endpoint: embedded.connectionUrl, region: 'us-east-1', accessKeyId: embedded.credentials.accessKeyId, secretAccessKey: embedded.credentials.secretAccessKey, forcePathStyle: true }],
    ]),
  );
  objects = connections.bucket('t', 'auditlake');
  table = icebergTableAt({ identifier: 'local.audit.events', location: TABLE_LOCATION, connectionId: 't' });
  await node.integrity.registerKey();
  for (let round = 0; round < 3; round++) {
    await ingest(Array.from({ length: 8 }, (_, i) => event(round * 8 + i + 1)));
    expect(await node.integrity.checkpointNow()).toBeDefined();
  }
  await ingest([event(100), event(101)]);
  const headSeq = node.store.chainHead.seq;
  await waitFor('the whole log tiered', async () => (await node.tiering.watermark()).seq === headSeq);
}, 120_000);

afterAll(async () => {
  connections?.close();
  await node?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('a tampered Iceberg tier fails offline verify with the right words', () => {
  let saved: Map<string, Uint8Array>;
  beforeAll(async () => {
    const head = node.store.chainHead.seq;
    const untouched = await verifyHistory(offline());
    expect(untouched.message).toBe(`verified ${head} records, seq 1..${head}, 3 checkpoints`);
    saved = await snapshotTable();
  });
  const restore = async () => {
    for (const [key, bytes] of saved) await objects.put(key, bytes);
    expect((await verifyHistory(offline())).ok).toBe(true);
  };

  it('a byte changed in a tiered value is an altered record, naming the field', async () => {
    try {
      const { path, rows } = await fileWith(12);
      // `SELECT 10` → `SELECT 19`: one byte, the same length.
      await rewriteDataFile(path, rows.map((row) => (row.seq === 12 ? { ...row, query: `${row.query.slice(0, -1)}9` } : row)));
      expect((await verifyHistory(offline())).message).toBe('altered record at seq 12 (eventId ev-10): field query changed');
    } finally {
      await restore();
    }
  });

  it('a changed salt (the record key K, content format v3) is an altered record naming the salt; removing it too', async () => {
    try {
      const { path, rows } = await fileWith(12);
      const salt = rows.find((row) => row.seq === 12)?.salt as string;
      expect(salt).toMatch(/^[A-Za-z0-9_-]{22}$/);
      await rewriteDataFile(path, rows.map((row) => (row.seq === 12 ? { ...row, salt: `${salt[0] === 'A' ? 'B' : 'A'}${salt.slice(1)}` } : row)));
      expect((await verifyHistory(offline())).message).toBe('altered record at seq 12 (eventId ev-10): field salt changed');
      const { salt: _removed, ...unsalted } = rows.find((row) => row.seq === 12) as (typeof rows)[number];
      await rewriteDataFile(path, rows.map((row) => (row.seq === 12 ? unsalted : row)));
      expect((await verifyHistory(offline())).message).toBe('altered record at seq 12 (eventId ev-10): field salt changed');
    } finally {
      await restore();
    }
  });

  it('a row removed by rewriting its data file is missing records', async () => {
    try {
      const { path, rows } = await fileWith(14);
      await rewriteDataFile(path, rows.filter((row) => row.seq !== 14));
      expect((await verifyHistory(offline())).message).toBe('missing records: seq 14..14 (1 record)');
    } finally {
      await restore();
    }
  });

  it('a data file dropped from its manifest is missing records', async () => {
    try {
      const { path, rows } = await fileWith(14);
      await rewriteManifests((entries) => (entries.some((e) => e.data_file.file_path === path) ? entries.filter((e) => e.data_file.file_path !== path) : entries));
      const seqs = rows.map((row) => row.seq as number);
      const report = await verifyHistory(offline());
      expect(report.ok).toBe(false);
      expect(report.message).toMatch(new RegExp(`^missing records: seq ${Math.min(...seqs)}\\.\\.${Math.max(...seqs)} `));
    } finally {
      await restore();
    }
  });

  it('two records swapped are reordered', async () => {
    try {
      const { path, rows } = await fileWith(5);
      const a = rows.find((row) => row.seq === 5) as TieredEvent;
      const b = rows.find((row) => row.seq === 6) as TieredEvent;
      expect(b).toBeDefined();
      await rewriteDataFile(path, rows.map((row) => (row.seq === 5 ? { ...b, seq: 5 } : row.seq === 6 ? { ...a, seq: 6 } : row)));
      expect((await verifyHistory(offline())).message).toMatch(/^reordered: the record at seq 5 \(eventId ev-5\) was chained at seq 6$/);
    } finally {
      await restore();
    }
  });

  /** Rewrites the manifest entry of the live file holding `seq` (the data file itself untouched). */
  const editEntryOf = async (seq: number, edit: (file: ManifestEntry['data_file']) => ManifestEntry['data_file']) => {
    const { path } = await fileWith(seq);
    await rewriteManifests((entries) => (entries.some((e) => e.data_file.file_path === path) ? entries.map((e) => (e.data_file.file_path === path ? { ...e, data_file: edit(e.data_file) } : e)) : entries));
    return path;
  };

  it('a data file moved to another day\'s partition in its manifest is refused, naming the file and a row outside it', async () => {
    try {
      const path = await editEntryOf(12, (file) => ({ ...file, partition: { ...file.partition, event_time_day: (file.partition.event_time_day as number) + 1 } }));
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: expect.stringMatching(new RegExp(`^tier file \\S+${path.split('/').at(-1)} holds a row with event time 2023-11-14T\\S+, outside what its commit declares \\(day 2023-11-15, `)),
      });
    } finally {
      await restore();
    }
  });

  it('a data file whose manifest narrows its event-time bounds is refused', async () => {
    try {
      await editEntryOf(12, (file) => ({
        ...file,
        lower_bounds: (file.lower_bounds ?? []).map((b) => (b.key === TS_FIELD_ID ? { ...b, value: encodeLongBound(decodeLongBound(b.value) + 1n) } : b)),
      }));
      await expect(verifyHistory(offline())).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringContaining('a search that skips files by those bounds would miss it') });
    } finally {
      await restore();
    }
  });

  it('a data file whose manifest declares another row count is refused', async () => {
    try {
      const { rows } = await fileWith(12);
      await editEntryOf(12, (file) => ({ ...file, record_count: file.record_count - 1 }));
      await expect(verifyHistory(offline())).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringContaining(`holds ${rows.length} rows, but its commit declares ${rows.length - 1}`) });
    } finally {
      await restore();
    }
  });
});

describe('the checkpoint in a snapshot summary', () => {
  it('is read from the newest ancestor that carries it when another engine committed on top', async () => {
    const saved = await snapshotTable();
    try {
      const loaded = (await loadIcebergTable(objects, table))!;
      const parent = currentSnapshot(loaded.metadata)!;
      const text = parent.summary[CHECKPOINT_SUMMARY_KEY]!;
      const chainHash = (JSON.parse(text) as { chainHash: string }).chainHash;
      // A forged checkpoint in the summary (its chain hash altered, the signature kept) …
      parent.summary[CHECKPOINT_SUMMARY_KEY] = text.replace(chainHash, `${chainHash[0] === '0' ? '1' : '0'}${chainHash.slice(1)}`);
      // … under another engine's commit without data change (as a Spark rewrite_manifests of nothing), carrying no auditlake.* keys.
      await commitForeignSnapshotOnTop(objects, table, loaded, 900_001);
      const report = await verifyHistory(offline());
      expect(report.ok).toBe(false);
      expect(report.message).toContain(`the summary of snapshot ${parent['snapshot-id']}`);
    } finally {
      for (const [key, bytes] of saved) await objects.put(key, bytes);
    }
  });
});
