// Goal: offline `auditlake verify` of an Iceberg tier names the first break for every way its
// data can be tampered with (the Parquet tier's suite is verify.test.ts): a byte changed in a
// tiered value, a row removed by rewriting its data file, a data file dropped from its manifest,
// two records swapped; and a data file whose manifest entry no longer tells where its rows are
// (another day's partition, narrowed event-time bounds, another row count), which hides rows
// from every reader that skips files by them while each record still verifies; likewise a
// manifest entry whose bounds or counts of any other column, or a manifest list whose
// partition summary, no longer covers the rows, while wider ones (as another engine may write)
// pass. Each tamper of the data is thorough — the manifest entry is recomputed from the new file
// (row count, size, counts and bounds), and the manifest list's manifest length and partition
// summary rewritten to match — so only the chain can catch it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  auditFieldId,
  currentSchema,
  currentSnapshot,
  dataFileFromParquetFooter,
  decodeIntBound,
  decodeLongBound,
  decodeManifest,
  decodeManifestList,
  decodeStringBound,
  encodeAuditParquet,
  encodeIntBound,
  encodeLongBound,
  encodeManifest,
  encodeManifestList,
  encodeStringBound,
  encodeTimestamptzBound,
  icebergParquetKvMetadata,
  readAuditParquet,
  manifestFileFor,
  truncateLowerBound,
  truncateUpperBound,
  TS_FIELD_ID,
  type ManifestEntry,
  type ManifestFile,
  type TieredEvent,
} from '@auditlake/format';
import { CHECKPOINT_SUMMARY_KEY, icebergTableAt, loadIcebergTable, metadataVersionKey, type S3Connections, s3Key, versionHintKey, type IcebergTableRef, type ObjectStore } from '@auditlake/lake';
import { commitForeignSnapshotOnTop } from '@auditlake/lake/testing';
import type { AuditNode, EmbeddedS3 } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCommand, verifyHistory } from '../src/verify-command.js';
import { startCountingProxy } from './counting-proxy.js';
import { embeddedS3Connections, ingestAll, offlineVerifyOptions, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-iceberg-tamper';
const TABLE_LOCATION = 's3://auditlake/warehouse/audit/events';
const DAY_MS = 86_400_000;

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

/**
 * Writes the manifests back (entries changed by `edit`) and the manifest list with their new
 * lengths and partition summaries; then `editList` may change the manifest list's rows.
 */
async function rewriteManifests(edit: (entries: ManifestEntry[]) => ManifestEntry[], editList: (files: ManifestFile[], manifests: Array<{ file: ManifestFile; entries: ManifestEntry[] }>) => ManifestFile[] = (files) => files): Promise<void> {
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
    const summed = manifestFileFor({ manifestPath: manifest.file.manifest_path, manifestLengthBytes: bytes.byteLength, entries, snapshotId: manifest.file.added_snapshot_id, sequenceNumber: manifest.file.sequence_number });
    // As a thorough tamperer would: the list's summary and counts of the manifest made to match what it now holds.
    const { partitions, added_files_count, existing_files_count, deleted_files_count, added_rows_count, existing_rows_count, deleted_rows_count } = summed;
    files.push({ ...manifest.file, manifest_length: bytes.byteLength, partitions, added_files_count, existing_files_count, deleted_files_count, added_rows_count, existing_rows_count, deleted_rows_count });
  }
  const written = editList(files, manifests);
  await objects.put(listKey, encodeManifestList(written, { snapshotId: snapshot['snapshot-id'], parentSnapshotId: snapshot['parent-snapshot-id'] ?? null, sequenceNumber: snapshot['sequence-number'] }));
  expect(list.files.length).toBe(written.length);
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

/** Rewrites a data file with other rows, and its manifest entry with it (row count, size, counts and bounds, as our writer makes them). */
async function rewriteDataFile(path: string, rows: TieredEvent[]): Promise<void> {
  const loaded = (await loadIcebergTable(objects, table))!;
  const bytes = encodeAuditParquet(rows, { kvMetadata: icebergParquetKvMetadata(currentSchema(loaded.metadata)) });
  await objects.put(s3Key(table, path), bytes);
  const recomputed = await dataFileFromParquetFooter({ filePath: path, parquetBytes: bytes });
  await rewriteManifests((entries) =>
    entries.some((e) => e.data_file.file_path === path) ? entries.map((e) => (e.data_file.file_path === path ? { ...e, data_file: recomputed } : e)) : entries,
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
  node = await startTieringNode(dataDir, {
    adminToken: ADMIN_TOKEN,
    props: {
      'auditlake.audit.tier.mode': 'iceberg',
      'auditlake.audit.tier.iceberg.table': 'local.audit.events',
      'auditlake.audit.tier.batch.size': '7',
      // The tamper cases edit and put back the tier's objects: a scheduled maintenance run
      // (hourly, at minute 0) compacting them meanwhile left a tier the restore could not
      // put back (CI crossed 12:00 here).
      'auditlake.audit.tier.maintenance.enabled': 'false',
      // The events are of 2023: retention (every minute by default) would delete them here
      // partway through the file, and a report read with the node before it would differ from
      // one read after (verify-stream.test.ts failed so in CI).
      'auditlake.audit.retention.interval.ms': '86400000',
    },
  });
  connections = embeddedS3Connections(node);
  objects = connections.bucket('t', 'auditlake');
  table = icebergTableAt({ identifier: 'local.audit.events', location: TABLE_LOCATION, connectionId: 't' });
  await node.integrity.registerKey();
  for (let round = 0; round < 3; round++) {
    await ingest(Array.from({ length: 8 }, (_, i) => event(round * 8 + i + 1)));
    expect(await node.integrity.checkpointNow()).toBeDefined();
  }
  // The last commit holds two days (a file each), so one manifest's partition summary spans both.
  await ingest([event(100), event(101), { ...event(102), ts: 1_700_000_000_000 + DAY_MS }]);
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
      // Read with the node, which still holds them and lists them as committed to the table: its
      // copies verify, but the tier every engine reads lacks them (this passed before: review).
      const withNode = await verifyHistory({ ...offline(), node: { url: node.url, token: ADMIN_TOKEN } });
      const [from, to] = [Math.min(...seqs), Math.max(...seqs)];
      expect(withNode.message).toBe(
        `missing records: seq ${from}..${to} (${to - from + 1} records) are not in the tier at ${TABLE_LOCATION}, which the node lists as committed there (the node still holds them; engines reading the tier do not see them)`,
      );
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

  it("a table schema that names two columns the other way round (every engine then shows one's values under the other's name), or gives one another type, is refused, naming the field", async () => {
    const edit = async (change: (fields: Array<{ id: number; name: string; type: string }>) => void) => {
      const loaded = (await loadIcebergTable(objects, table))!;
      const key = metadataVersionKey(table, loaded.version);
      const metadata = JSON.parse(new TextDecoder().decode(await objects.get(key))) as { schemas: Array<{ 'schema-id': number; fields: Array<{ id: number; name: string; type: string }> }>; 'current-schema-id': number };
      change(metadata.schemas.find((schema) => schema['schema-id'] === metadata['current-schema-id'])!.fields);
      await objects.put(key, JSON.stringify(metadata));
    };
    try {
      await edit((fields) => {
        for (const field of fields) field.name = field.name === 'user_id' ? 'resource' : field.name === 'resource' ? 'user_id' : field.name;
      });
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_TABLE_INVALID',
        message: `the current schema of ${TABLE_LOCATION}: table field id 3 is named resource; auditlake writes user_id under that id: readers of the table resolve its columns by this schema, so they would not show what auditlake wrote`,
      });
      await restore();
      await edit((fields) => {
        for (const field of fields) if (field.name === 'query') field.type = 'binary';
      });
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_TABLE_INVALID',
        message: `the current schema of ${TABLE_LOCATION}: table field id 7 (query) has type "binary"; auditlake writes string: readers of the table resolve its columns by this schema, so they would not show what auditlake wrote`,
      });
    } finally {
      await restore();
    }
  });

  it("a data file whose iceberg.schema footer swaps two columns' names (icebird maps ids to names by it), patched in place at the same size, is refused, naming the file", async () => {
    try {
      const { path } = await fileWith(12);
      const key = s3Key(table, path);
      const text = Buffer.from(await objects.get(key)).toString('latin1');
      const [a, b] = ['"name":"user_id"', '"name":"resource"'];
      const from = text.indexOf(a, text.indexOf('{"type":"struct"'));
      const to = text.indexOf(b, from) + b.length;
      expect(from).toBeGreaterThan(0);
      const swapped = text.slice(from, to).replace(a, '\u0000').replace(b, a).replace('\u0000', b);
      await objects.put(key, Buffer.from(text.slice(0, from) + swapped + text.slice(to), 'latin1'));
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_TABLE_INVALID',
        message: expect.stringMatching(new RegExp(`^tier file ${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: tiered file footer iceberg\\.schema puts "resource" under field id 3; auditlake writes user_id under 3`)),
      });
    } finally {
      await restore();
    }
  });

  it('a version hint set back to an older version whose metadata was rewritten (hint-trusting readers see other files) is refused; an honest lag is a note on standard error', async () => {
    const embedded = node.embeddedS3 as EmbeddedS3;
    const args = ['--table', TABLE_LOCATION, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey];
    const run = async () => {
      let stdout = '';
      let stderr = '';
      const code = await verifyCommand(args, {}, { stdout: { write: (t: string) => ((stdout += t), true) }, stderr: { write: (t: string) => ((stderr += t), true) } });
      return { code, stdout, stderr };
    };
    try {
      const loaded = (await loadIcebergTable(objects, table))!;
      expect(loaded.version).toBeGreaterThan(2);
      // Honest: the hint one version behind (a hint write still to come, or one that failed).
      await objects.put(versionHintKey(table), String(loaded.version - 1));
      const lagging = await run();
      expect(lagging.code).toBe(0);
      expect(lagging.stderr).toMatch(new RegExp(`verify: version-hint\\.text of ${TABLE_LOCATION.replace(/[./]/g, '\\$&')} names v${loaded.version - 1}, behind the newest v${loaded.version}: readers that trust the hint see snapshot \\d+, an earlier state of the history verified here`));
      // Forged: v1 rewritten as the newest metadata whose current snapshot lists its parent's
      // files (the last commit's rows hidden from icebird and DuckDB), the hint set back to it.
      const metadata = structuredClone(loaded.metadata);
      const current = currentSnapshot(metadata)!;
      const parent = metadata.snapshots.find((snapshot) => snapshot['snapshot-id'] === current['parent-snapshot-id'])!;
      current['manifest-list'] = parent['manifest-list'];
      await objects.put(metadataVersionKey(table, 1), JSON.stringify(metadata));
      await objects.put(versionHintKey(table), '1');
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_TABLE_INVALID',
        message: `version-hint.text of ${TABLE_LOCATION} names v1, behind the newest v${loaded.version}, and its current snapshot ${current['snapshot-id']} names manifest list ${parent['manifest-list']} (sequence number ${current['sequence-number']}), where the newest version names ${currentSnapshot(loaded.metadata)!['manifest-list']} (${current['sequence-number']}): readers that trust the hint (icebird, DuckDB) read a table this verify does not vouch for`,
      });
    } finally {
      await restore();
    }
  });

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

  const USER_ID = auditFieldId('user_id');
  const EVENT_TIME = auditFieldId('event_time');
  const RESOURCE = auditFieldId('resource');
  const QUERY = auditFieldId('query');
  /** `map` with the value of `key` replaced. */
  const replaced = <V>(map: Array<{ key: number; value: V }> | null, key: number, value: V) => (map ?? []).map((entry) => (entry.key === key ? { ...entry, value } : entry));
  const micros = (ms: number) => BigInt(ms) * 1000n;

  it('the manifests declare counts of every column and bounds of each one with values, which the checks below narrow', async () => {
    for (const { entries } of (await currentFiles()).manifests) {
      for (const { data_file: file } of entries) {
        expect(file.value_counts?.map((count) => count.key)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
        expect(file.null_value_counts?.find((count) => count.key === RESOURCE)?.value).toBe(0);
        for (const key of [USER_ID, EVENT_TIME, QUERY]) {
          expect(file.lower_bounds?.some((bound) => bound.key === key)).toBe(true);
          expect(file.upper_bounds?.some((bound) => bound.key === key)).toBe(true);
        }
      }
    }
  });

  it('a data file whose manifest narrows the upper bound of user_id is refused, naming the file, the column and both values', async () => {
    try {
      const { path, rows } = await fileWith(12);
      const greatest = rows.map((row) => row.userId).sort().at(-1) as string;
      expect(greatest > 'alice').toBe(true);
      await editEntryOf(12, (file) => ({ ...file, upper_bounds: replaced(file.upper_bounds, USER_ID, encodeStringBound('alice')) }));
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: `tier file ${s3Key(table, path)} holds user_id "${greatest}", above the upper bound its commit declares for the column ("alice"): a search that skips files by those bounds would miss it; the table's metadata was altered`,
      });
    } finally {
      await restore();
    }
  });

  it('a data file whose manifest collapses its event_time bounds to one microsecond is refused', async () => {
    try {
      const { path, rows } = await fileWith(12);
      const times = rows.map((row) => row.timestamp);
      const [least, greatest] = [Math.min(...times), Math.max(...times)];
      expect(least).toBeLessThan(greatest);
      const newest = encodeTimestamptzBound(micros(greatest));
      await editEntryOf(12, (file) => ({ ...file, lower_bounds: replaced(file.lower_bounds, EVENT_TIME, newest), upper_bounds: replaced(file.upper_bounds, EVENT_TIME, newest) }));
      const shown = (ms: number) => `${new Date(ms).toISOString()} (${micros(ms)} µs)`;
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: `tier file ${s3Key(table, path)} holds event_time ${shown(least)}, below the lower bound its commit declares for the column (${shown(greatest)}): a search that skips files by those bounds would miss it; the table's metadata was altered`,
      });
    } finally {
      await restore();
    }
  });

  const SEQ = auditFieldId('seq');
  const seqBound = (seq: number) => encodeLongBound(BigInt(seq));

  it("a manifest entry whose seq bounds lie is refused, naming the file and both values, read alone or with the node (verify orders its reads by them)", async () => {
    const withNode = () => ({ ...offline(), node: { url: node.url, token: ADMIN_TOKEN } });
    try {
      const { path, rows } = await fileWith(12);
      const seqs = rows.map((row) => row.seq as number);
      const [least, greatest] = [Math.min(...seqs), Math.max(...seqs)];
      expect(least).toBeLessThan(greatest);
      // Raised past every seq the file holds: verify reaches the file only after the records that follow them.
      await editEntryOf(12, (file) => ({ ...file, lower_bounds: replaced(file.lower_bounds, SEQ, seqBound(greatest + 3)), upper_bounds: replaced(file.upper_bounds, SEQ, seqBound(greatest + 3)) }));
      const raised = {
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: `tier file ${s3Key(table, path)} holds seq ${least}, below the lower bound its commit declares for the column (${greatest + 3}): a search that skips files by those bounds would miss it; the table's metadata was altered`,
      };
      await expect(verifyHistory(offline())).rejects.toMatchObject(raised);
      await expect(verifyHistory(withNode())).rejects.toMatchObject(raised);
      await restore();
      // Lowered below the greatest it holds.
      await editEntryOf(12, (file) => ({ ...file, upper_bounds: replaced(file.upper_bounds, SEQ, seqBound(least)) }));
      const lowered = {
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: `tier file ${s3Key(table, path)} holds seq ${greatest}, above the upper bound its commit declares for the column (${least}): a search that skips files by those bounds would miss it; the table's metadata was altered`,
      };
      await expect(verifyHistory(offline())).rejects.toMatchObject(lowered);
      await expect(verifyHistory(withNode())).rejects.toMatchObject(lowered);
    } finally {
      await restore();
    }
  });

  it('a manifest entry whose seq bounds are wider than its rows, or that declares none, verifies with the untouched report (the file read earlier, or twice)', async () => {
    const untouched = await verifyHistory(offline());
    const withNode = () => ({ ...offline(), node: { url: node.url, token: ADMIN_TOKEN } });
    const untouchedWithNode = await verifyHistory(withNode());
    expect(untouchedWithNode.ok).toBe(true);
    try {
      await editEntryOf(12, (file) => ({ ...file, lower_bounds: replaced(file.lower_bounds, SEQ, seqBound(1)), upper_bounds: replaced(file.upper_bounds, SEQ, seqBound(1_000_000)) }));
      expect(await verifyHistory(offline())).toEqual(untouched);
      expect(await verifyHistory(withNode())).toEqual(untouchedWithNode);
      await restore();
      await editEntryOf(12, (file) => ({ ...file, lower_bounds: (file.lower_bounds ?? []).filter((b) => b.key !== SEQ), upper_bounds: (file.upper_bounds ?? []).filter((b) => b.key !== SEQ) }));
      expect(await verifyHistory(offline())).toEqual(untouched);
      expect(await verifyHistory(withNode())).toEqual(untouchedWithNode);
    } finally {
      await restore();
    }
  });

  it('a data file whose manifest declares other null or value counts than it holds is refused', async () => {
    try {
      const { path, rows } = await fileWith(12);
      // Every value null: an engine skips the file for any comparison on resource.
      await editEntryOf(12, (file) => ({ ...file, null_value_counts: replaced(file.null_value_counts, RESOURCE, rows.length) }));
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: `tier file ${s3Key(table, path)} holds 0 nulls in column resource, but its commit declares ${rows.length}: a search that skips files by their null counts would miss it; the table's metadata was altered`,
      });
      await restore();
      await editEntryOf(12, (file) => ({ ...file, value_counts: replaced(file.value_counts, USER_ID, 0) }));
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: expect.stringContaining(`holds ${rows.length} values in column user_id, but its commit declares 0: a search that skips files by their value counts would miss it`),
      });
    } finally {
      await restore();
    }
  });

  it("a manifest list whose partition summary of a manifest is narrowed to its newest day is refused, naming the manifest and a file it hides", async () => {
    try {
      const { listKey } = await currentFiles();
      const narrowed: Array<{ manifest: string; hidden: string; newest: number; hiddenDay: number }> = [];
      await rewriteManifests(
        (entries) => entries,
        (files, manifests) =>
          files.map((file) => {
            const live = (manifests.find((m) => m.file.manifest_path === file.manifest_path)?.entries ?? []).filter((e) => e.status !== 2);
            const days = live.map((e) => e.data_file.partition.event_time_day as number);
            const newest = Math.max(...days);
            const older = live.find((e) => (e.data_file.partition.event_time_day as number) < newest);
            if (older === undefined) return file;
            narrowed.push({ manifest: file.manifest_path, hidden: older.data_file.file_path, newest, hiddenDay: older.data_file.partition.event_time_day as number });
            const summary = file.partitions?.[0];
            expect(summary && decodeIntBound(summary.lower_bound as Uint8Array)).toBe(Math.min(...days));
            return { ...file, partitions: [{ contains_null: false, contains_nan: false, lower_bound: encodeIntBound(newest), upper_bound: encodeIntBound(newest) }] };
          }),
      );
      expect(narrowed).toHaveLength(1);
      const [{ manifest, hidden, newest, hiddenDay }] = narrowed as [(typeof narrowed)[number]];
      const day = (ordinal: number) => new Date(ordinal * DAY_MS).toISOString().slice(0, 10);
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: `manifest list ${listKey}: its summary of manifest ${manifest} declares event_time_day ${day(newest)}..${day(newest)}, no nulls, but the manifest lists data file ${hidden} of day ${day(hiddenDay)}: a search that skips manifests by their partition summaries would miss it; the table's metadata was altered`,
      });
    } finally {
      await restore();
    }
  });

  it('a manifest list that counts no added or existing files of a manifest (Java scans skip it), or calls it a delete manifest, is refused, naming the manifest and the count', async () => {
    for (const [edit, declares] of [
      [(file: ManifestFile) => ({ ...file, added_files_count: 0, existing_files_count: 0 }), /declares (added|existing)_files_count 0, but the manifest holds [1-9]\d* (added|existing) files?/],
      [(file: ManifestFile) => ({ ...file, added_rows_count: file.added_rows_count + 1 }), /declares added_rows_count \d+, but the manifest's added files hold \d+ rows/],
      [(file: ManifestFile) => ({ ...file, content: 1 }), /declares content 1 \(deletes\), but the manifest lists data files/],
    ] as const) {
      try {
        const { listKey } = await currentFiles();
        await rewriteManifests(
          (entries) => entries,
          (files) => files.map((file, i) => (i === 0 ? edit(file) : file)),
        );
        const refused = (await verifyHistory(offline()).catch((err: unknown) => err)) as { code: string; message: string };
        expect(refused.code).toBe('AUDIT_INTEGRITY_MISMATCH');
        expect(refused.message).toMatch(new RegExp(`^manifest list ${listKey.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: its entry for manifest \\S+ ${declares.source}: an engine that plans its scans by these would miss the manifest's files; the table's metadata was altered$`));
      } finally {
        await restore();
      }
    }
  });

  it('bounds, truncated string bounds and partition summaries wider than the rows need (as another engine may write them) verify', async () => {
    try {
      await rewriteManifests(
        (entries) =>
          entries.map((entry) => {
            const file = entry.data_file;
            const upper = decodeLongBound(file.upper_bounds?.find((bound) => bound.key === EVENT_TIME)?.value as Uint8Array);
            let lowerBounds = replaced(replaced(file.lower_bounds, USER_ID, encodeStringBound('')), EVENT_TIME, encodeTimestamptzBound(0n));
            let upperBounds = replaced(replaced(file.upper_bounds, USER_ID, encodeStringBound('user-3')), EVENT_TIME, encodeTimestamptzBound(upper + micros(3_600_000)));
            // Truncated as Java's truncate(3) would: a prefix of the least value, and the greatest one's prefix with its last character incremented.
            const query = (map: typeof lowerBounds) => decodeStringBound(map.find((bound) => bound.key === QUERY)?.value as Uint8Array);
            lowerBounds = replaced(lowerBounds, QUERY, encodeStringBound(truncateLowerBound(query(lowerBounds), 3)));
            upperBounds = replaced(upperBounds, QUERY, encodeStringBound(truncateUpperBound(query(upperBounds), 3) as string));
            return { ...entry, data_file: { ...file, lower_bounds: lowerBounds, upper_bounds: upperBounds } };
          }),
        (files) =>
          files.map((file) => {
            const summary = file.partitions?.[0] as NonNullable<ManifestFile['partitions']>[number];
            const [lower, upper] = [decodeIntBound(summary.lower_bound as Uint8Array), decodeIntBound(summary.upper_bound as Uint8Array)];
            return { ...file, partitions: [{ ...summary, contains_null: true, lower_bound: encodeIntBound(lower - 7), upper_bound: encodeIntBound(upper + 7) }] };
          }),
      );
      const report = await verifyHistory(offline());
      expect(report.message).toMatch(/^verified \d+ records/);
    } finally {
      await restore();
    }
  });
});

describe('verify reads each data file of the table once', () => {
  it('alone and with the node, in the order of the seq bounds its manifest entries declare: one GET per data file', async () => {
    const proxy = await startCountingProxy((node.embeddedS3 as EmbeddedS3).connectionUrl);
    try {
      const live = (await currentFiles()).manifests.flatMap(({ entries }) => entries.filter((entry) => entry.status !== 2).map((entry) => s3Key(table, entry.data_file.file_path)));
      expect(live.length).toBeGreaterThan(3);
      for (const withNode of [false, true]) {
        proxy.clear();
        const options = offlineVerifyOptions(node, ['--table', TABLE_LOCATION], withNode ? ['--url', node.url, '--token', ADMIN_TOKEN] : [], proxy.endpoint);
        expect((await verifyHistory(options)).ok).toBe(true);
        const gets = proxy.getsOf('.parquet');
        expect([...gets.keys()].sort()).toEqual(live.map((key) => `auditlake/${key}`).sort());
        expect([...gets.values()].every((count) => count === 1)).toBe(true);
      }
    } finally {
      await proxy.close();
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
