// Goal: `auditlake verify` proves a real node's history — online from the node, offline from
// the bucket alone — and names the first break for every way the tier can be tampered with:
// a changed value, a removed row, a dropped file, a cut tail, swapped records, a forged or
// foreign-signed checkpoint, a replaced public key, a chain spliced from another cluster.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  assembleColumnChunks,
  auditColumnSources,
  auditRows,
  bytesSource,
  encodeAuditParquet,
  encodeColumnChunks,
  ParquetFileAssembler,
  readAuditParquet,
  readAuditParquetFooter,
  RowGroupSketch,
  rowGroupSketches,
  tierFileKvMetadata,
  type AuditRow,
  type TieredEvent,
} from '@auditlake/format';
import { checkpointHash, encodeSignedCheckpoint, loadOrCreateNodeKey, parseSignedCheckpoint, signCheckpoint, type CheckedBatch, type SignedCheckpoint } from '@auditlake/integrity';
import { COMMITS_DIR, packIntegrityCheckpoints, type S3Connections, writeParquetCheckpoint, type CommitMarker, type ObjectStore, type ParquetCheckpoint } from '@auditlake/lake';
import { resolveConfig } from '@auditlake/model';
import { startAuditNode, type AuditNode, type EmbeddedS3 } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCommand, verifyHistory } from '../src/verify-command.js';
import { parseVerifyOptions, type TierLocationOption } from '../src/verify-options.js';
import { readTierProof } from '../src/tier-proof.js';
import { VerifyChecks, type VerifyCheckJob } from '../src/verify-checks.js';
import { embeddedS3Connections, ingestAll, offlineVerifyOptions, parquetTier, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-verify-tests';
const BUCKET = 'auditlake';
const PREFIX = 'tier';
const TIER_PATH = `s3://${BUCKET}/${PREFIX}`;

let dataDir: string;
let node: AuditNode;
let objects: ObjectStore;
let connections: S3Connections;

const ingest = (events: Array<Record<string, unknown>>) => ingestAll(node, ADMIN_TOKEN, events);
const offline = (extra: string[] = []) => offlineVerifyOptions(node, ['--path', TIER_PATH], extra);

function event(i: number): Record<string, unknown> {
  return { eventId: `ev-${i}`, userId: `user-${i % 3}`, source: 'trino', action: 'data:Select', resource: `hive.sales.t${i}`, decision: 'ALLOW', tables: [`hive.sales.t${i}`], query: `SELECT ${i}`, ts: 1_700_000_000_000 + i * 1000 };
}

function online(extra: string[] = []) {
  return parseVerifyOptions(['--url', node.url, '--token', ADMIN_TOKEN, ...extra], {});
}

async function markers(): Promise<Array<{ key: string; marker: CommitMarker }>> {
  const keys = await objects.list(`${PREFIX}/${COMMITS_DIR}/`);
  return Promise.all(keys.map(async (key) => ({ key, marker: JSON.parse(new TextDecoder().decode(await objects.get(key))) as CommitMarker })));
}

async function readRows(key: string): Promise<TieredEvent[]> {
  return readAuditParquet(await objects.byteSource(key));
}

/** Every object under the tier prefix, to put back after a tamper. */
async function snapshotTier(): Promise<Map<string, Uint8Array>> {
  const saved = new Map<string, Uint8Array>();
  for (const key of await objects.list(`${PREFIX}/`)) saved.set(key, await objects.get(key));
  return saved;
}

/** Tampering only rewrites objects, so putting every saved one back restores the tier. */
async function restoreTier(saved: Map<string, Uint8Array>): Promise<void> {
  for (const [key, bytes] of saved) await objects.put(key, bytes);
}

/** Rewrites a data file with other rows, and the marker's recorded size, row count and event-time bounds with it (as a thorough tamperer would). */
async function rewriteFile(key: string, rows: TieredEvent[]): Promise<void> {
  const bytes = encodeAuditParquet(rows);
  await objects.put(key, bytes);
  for (const { key: markerKey, marker } of await markers()) {
    const file = marker.files.find((f) => f.key === key);
    if (file === undefined) continue;
    file.bytes = bytes.byteLength;
    file.rows = rows.length;
    file.tsMin = Math.min(...rows.map((row) => row.timestamp));
    file.tsMax = Math.max(...rows.map((row) => row.timestamp));
    await objects.put(markerKey, JSON.stringify(marker));
  }
}

/** Removes every record after `lastSeq` from the tier, rewriting files and commit markers to end there (as a thorough tamperer would). */
async function cutTierAfter(lastSeq: number): Promise<void> {
  for (const { key, marker } of await markers()) {
    if (marker.firstSeq > lastSeq) {
      await objects.put(key, JSON.stringify({ ...marker, files: [], watermark: { ...marker.watermark, seq: lastSeq } }));
      continue;
    }
    for (const file of marker.files) {
      const rows = await readRows(file.key);
      if (rows.some((row) => (row.seq as number) > lastSeq)) await rewriteFile(file.key, rows.filter((row) => (row.seq as number) <= lastSeq));
    }
    if (marker.watermark.seq > lastSeq) {
      const current = (await markers()).find((m) => m.key === key)?.marker as CommitMarker;
      current.watermark.seq = lastSeq;
      await objects.put(key, JSON.stringify(current));
    }
  }
}

/** The data file holding `seq`, and its rows. */
async function fileWith(seq: number): Promise<{ key: string; rows: TieredEvent[] }> {
  for (const { marker } of await markers()) {
    for (const file of marker.files) {
      const rows = await readRows(file.key);
      if (rows.some((row) => row.seq === seq)) return { key: file.key, rows };
    }
  }
  throw new Error(`no tiered file holds seq ${seq}`);
}

async function checkpointObjects(): Promise<Array<{ key: string; checkpoint: SignedCheckpoint }>> {
  const keys = await objects.list(`${PREFIX}/_integrity/checkpoints/`);
  return Promise.all(keys.map(async (key) => ({ key, checkpoint: parseSignedCheckpoint(new TextDecoder().decode(await objects.get(key))) })));
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'auditlake-verify-'));
  node = await startTieringNode(dataDir, {
    adminToken: ADMIN_TOKEN,
    props: {
      ...parquetTier(TIER_PATH),
      'auditlake.audit.tier.batch.size': '7',
      // The tamper cases edit and put back the tier's objects: a scheduled maintenance run
      // (hourly, at minute 0) compacting them meanwhile left a tier the restore could not
      // put back (CI crossed 12:00 here).
      'auditlake.audit.tier.maintenance.enabled': 'false',
      // The events are of 2023: under the 90-day default, the retention prune (every minute) took
      // them from the node's log once tiered, and a case comparing reports of the node and tier
      // together saw 30 copies in both before the prune and 4 after it (CI, on a busy machine).
      'auditlake.audit.retention.days': '36500',
    },
  });
  connections = embeddedS3Connections(node);
  objects = connections.bucket('t', BUCKET);
  // The key registration first (seq 1), then three rounds of events, each closed by a
  // checkpoint, then a tail after the last one.
  await node.integrity.registerKey();
  expect(node.store.chainHead.seq).toBe(1);
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

describe('an untouched history', () => {
  it('verifies online, offline from the bucket, and both as one', async () => {
    const head = node.store.chainHead.seq;
    // The key registration, 26 events and 3 checkpoint records.
    expect(head).toBe(1 + 26 + 3);
    for (const options of [online(), offline()]) {
      const report = await verifyHistory(options);
      expect(report.message).toBe(`verified ${head} records, seq 1..${head}, 3 checkpoints`);
      expect(report.ok).toBe(true);
    }
    // The node's log and the tier as one history: every record is in both, and both copies agree.
    const both = await verifyHistory(offline(['--url', node.url, '--token', ADMIN_TOKEN]));
    expect(both.message).toBe(`verified ${head} records, seq 1..${head}, 3 checkpoints; ${head} identical copies ignored`);
    expect((await checkpointObjects()).map((c) => c.checkpoint.seq)).toEqual([9, 18, 27]);
  });

  it('verifies under the node key pinned with --public-key, and not under another key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-keys-'));
    try {
      const view = (await (await fetch(`${node.url}/admin/audit/integrity`, { headers: { authorization: `Token ${ADMIN_TOKEN}` } })).json()) as { keyId: string; keys: Array<{ key: string }> };
      const own = JSON.parse(view.keys[0]?.key as string) as { keyId: string; publicKey: string };
      expect(own.keyId).toBe(view.keyId);
      await writeFile(join(dir, 'node.pem'), own.publicKey);
      await writeFile(join(dir, 'other.pem'), generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString());
      expect((await verifyHistory(offline(['--public-key', join(dir, 'node.pem')]))).ok).toBe(true);
      const report = await verifyHistory(offline(['--public-key', join(dir, 'other.pem')]));
      expect(report.ok).toBe(false);
      expect(report.message).toMatch(/unknown key/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('prints the verdict and exits 0, or 2 for a usage error', async () => {
    let stdout = '';
    let stderr = '';
    const streams = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } };
    expect(await verifyCommand(['--url', node.url, '--token', ADMIN_TOKEN], {}, streams)).toBe(0);
    expect(stdout).toMatch(/^verified 30 records, seq 1\.\.30, 3 checkpoints\n$/);
    // --pre-chain-holes is the operator's word that the history began before the chain: a history without holes reads the same.
    expect(online().preChainHoles).toBe(false);
    expect(online(['--pre-chain-holes']).preChainHoles).toBe(true);
    stdout = '';
    expect(await verifyCommand(['--url', node.url, '--token', ADMIN_TOKEN, '--pre-chain-holes'], {}, streams)).toBe(0);
    expect(stdout).toMatch(/^verified 30 records, seq 1\.\.30, 3 checkpoints\n$/);
    expect(await verifyCommand(['--path', 'not-a-location'], {}, streams)).toBe(2);
    expect(stderr).toContain('--path must be s3://bucket[/prefix]: not-a-location');
    expect(await verifyCommand([], {}, streams)).toBe(2);
    expect(stderr).toContain('name what to verify');
    for (const bad of ['-1', 'two', '65', '1.5']) {
      stderr = '';
      expect(await verifyCommand(['--url', node.url, '--token', ADMIN_TOKEN, `--threads=${bad}`], {}, streams)).toBe(2);
      expect(stderr).toContain(`--threads must be an integer from 0 to 64: ${bad}`);
    }
  });

  it('a path that holds no tier is nothing to verify, exit 1, not "verified 0 records" (a typo, or a prefix emptied whole)', async () => {
    const typo = await verifyHistory(offlineVerifyOptions(node, ['--path', `${TIER_PATH}-typo`]));
    expect(typo).toMatchObject({ ok: false, records: 0, message: 'nothing to verify: no records and no checkpoints were found (a wrong path, table or node, or a history removed whole)' });
  });

  it('gives the same report with the decoding and hashing on no worker thread, one, or three', async () => {
    const withThreads = (threads: string) => [
      verifyHistory(online(['--threads', threads])),
      verifyHistory(offline(['--threads', threads])),
      verifyHistory(offline(['--url', node.url, '--token', ADMIN_TOKEN, '--threads', threads])),
    ];
    const reference = await Promise.all(withThreads('0'));
    expect(reference.map((report) => report.ok)).toEqual([true, true, true]);
    for (const threads of ['1', '3']) expect(await Promise.all(withThreads(threads))).toEqual(reference);
  });
});

describe('a tampered tier fails verify with the right words', () => {
  let saved: Map<string, Uint8Array>;
  beforeAll(async () => {
    saved = await snapshotTier();
  });
  const restore = async () => {
    await restoreTier(saved);
    expect((await verifyHistory(offline())).ok).toBe(true);
  };

  it('a checkpoint of the Parquet log is checked against the markers it folds: an honest one verifies, one that leaves a file out (hiding its rows from searches) or is damaged is refused, naming it', async () => {
    const location = { bucket: BUCKET, prefix: PREFIX };
    const write = await writeParquetCheckpoint({ objects, location, fence: { term: 1, mayCommit: () => true }, now: Date.now }, 1);
    const key = write?.key as string;
    try {
      expect(write?.written).toBe(true);
      const honest = await verifyHistory(offline());
      expect(honest.ok).toBe(true);
      const checkpoint = JSON.parse(new TextDecoder().decode(await objects.get(key))) as ParquetCheckpoint;
      const dropped = checkpoint.files[0] as ParquetCheckpoint['files'][number];
      await objects.put(key, JSON.stringify({ ...checkpoint, files: checkpoint.files.slice(1) }));
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: expect.stringContaining(`the Parquet log checkpoint ${objects.url(key)} does not agree with the markers it folds: it omits or alters live file ${dropped.key}`),
      });
      await objects.put(key, '{"format":');
      await expect(verifyHistory(offline())).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringContaining(`${objects.url(key)} is not a valid Parquet log checkpoint`) });
    } finally {
      await objects.delete(key);
      await restore();
    }
  });

  it('a changed tiered value is an altered record, naming the field', async () => {
    try {
      const { key, rows } = await fileWith(12);
      await rewriteFile(key, rows.map((row) => (row.seq === 12 ? { ...row, userId: `${row.userId}x` } : row)));
      const report = await verifyHistory(offline());
      expect(report.message).toBe('altered record at seq 12 (eventId ev-10): field userId changed');
    } finally {
      await restore();
    }
  });

  it('a commit marker that declares a data file on another day, or with narrowed bounds, is refused on every thread count, naming the file (its records still verify)', async () => {
    try {
      const { key } = await fileWith(12);
      for (const { key: markerKey, marker } of await markers()) {
        const file = marker.files.find((f) => f.key === key);
        if (file === undefined) continue;
        // Searches skip the file for any window before its declared start: its first rows vanish from them.
        file.tsMin += 1;
        await objects.put(markerKey, JSON.stringify(marker));
      }
      for (const threads of ['0', '2']) {
        await expect(verifyHistory(offline(['--threads', threads]))).rejects.toMatchObject({
          code: 'AUDIT_INTEGRITY_MISMATCH',
          message: expect.stringMatching(new RegExp(`^tier file ${key} holds a row with event time \\S+, outside what its commit declares \\(day 2023-11-14, event times `)),
        });
      }
      const lines: string[] = [];
      const embedded = node.embeddedS3 as EmbeddedS3;
      const argv = ['--path', TIER_PATH, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey];
      const code = await verifyCommand(argv, {}, { stdout: { write: (t: string) => lines.push(t) }, stderr: { write: (t: string) => lines.push(t) } });
      expect(code).toBe(1);
      expect(lines.join('')).toMatch(/^auditlake verify: tier file \S+ holds a row with event time/);
    } finally {
      await restore();
    }
  });

  it('a data file whose footer hides rows from searches (narrower ts statistics, a sketch without a user) is refused on every thread count, naming the file and row group (its records still verify)', async () => {
    try {
      const { key, rows } = await fileWith(12);
      const bytes = await objects.get(key);
      const footer = await readAuditParquetFooter(bytesSource(bytes), { exactStatistics: true });
      const sketches = rowGroupSketches(footer) as RowGroupSketch[];
      /** The file's data pages copied byte for byte under the footer as `alter` left it. */
      const reassembled = (sketch: (index: number) => RowGroupSketch) => {
        const assembler = new ParquetFileAssembler();
        footer.row_groups.forEach((_, index) => assembler.addRowGroup({ bytes, footer, index, sketch: sketch(index) }));
        return assembler.finish();
      };
      const latest = rows.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
      const ts = footer.row_groups[0]?.columns.find((c) => c.meta_data?.path_in_schema[0] === 'ts')?.meta_data?.statistics;
      if (ts === undefined) throw new Error('the file has no ts statistics');
      const trueMax = ts.max_value;
      if (trueMax === undefined) throw new Error('the file has no ts max_value');
      // A search for the newest event's time skips the group: that event vanishes from it.
      ts.max_value = BigInt(latest.timestamp - 1);
      await objects.put(key, reassembled((index) => sketches[index] as RowGroupSketch));
      for (const threads of ['0', '2']) {
        await expect(verifyHistory(offline(['--threads', threads]))).rejects.toMatchObject({
          code: 'AUDIT_INTEGRITY_MISMATCH',
          message: `tier file ${key}: row group 0: column ts: its statistics declare a greatest value of ${latest.timestamp - 1}; the row with seq ${latest.seq} is outside it: a search that skips row groups by their footer statistics would miss it; the file's footer was altered`,
        });
      }
      ts.max_value = trueMax;
      // The same rows under a sketch made without the rows of one user: `user=…` skips the group.
      const victim = rows.find((row) => row.seq === 12) as TieredEvent;
      const forged = RowGroupSketch.of(encodeRowsWithout(rows, victim.userId));
      await objects.put(key, reassembled(() => new RowGroupSketch(rows.length, forged.decisions, forged.actions, forged.bloom)));
      for (const threads of ['0', '2']) {
        await expect(verifyHistory(offline(['--threads', threads]))).rejects.toMatchObject({
          code: 'AUDIT_INTEGRITY_MISMATCH',
          message: expect.stringMatching(new RegExp(`^tier file ${key}: row group 0: its row-group sketch leaves out a value, which the row with seq \\d+ holds`)),
        });
      }
      // Put back under its true footer (copied the same way), it verifies.
      await objects.put(key, reassembled((index) => sketches[index] as RowGroupSketch));
      expect((await verifyHistory(offline())).ok).toBe(true);
    } finally {
      await restore();
    }
  });

  it('a file refused while others are being checked fails verify only once no check job is running (the workers are closed idle)', async () => {
    try {
      const { key } = await fileWith(12);
      for (const { key: markerKey, marker } of await markers()) {
        const file = marker.files.find((f) => f.key === key);
        if (file === undefined) continue;
        file.rows += 1;
        await objects.put(markerKey, JSON.stringify(marker));
      }
      // Checks of other files are held until the refused one has failed: they are in flight then.
      let running = 0;
      let runningAtFailure: number | undefined;
      let refused!: () => void;
      const refusedYet = new Promise<void>((resolve) => (refused = resolve));
      class WatchedChecks extends VerifyChecks {
        override async check(job: VerifyCheckJob): Promise<CheckedBatch> {
          running++;
          try {
            const batch = await super.check(job);
            if (batch.seqs.includes(12)) setImmediate(refused);
            else await refusedYet;
            return batch;
          } finally {
            running--;
          }
        }
      }
      const checks = new WatchedChecks(2);
      try {
        const tier = offline().tiers[0] as TierLocationOption;
        // Its files are checked as its records are read in seq order.
        const readTier = async () => {
          const proof = await readTierProof(tier, checks);
          try {
            for await (const chunk of proof.records()) expect(chunk.length).toBeGreaterThan(0);
          } finally {
            await proof.close();
          }
        };
        await expect(
          readTier().catch((err: unknown) => {
            runningAtFailure = running;
            throw err;
          }),
        ).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH' });
      } finally {
        await checks.close();
      }
      expect(runningAtFailure).toBe(0);
    } finally {
      await restore();
    }
  });

  it('a tampered tier gives the same report on any number of worker threads', async () => {
    try {
      const changed = await fileWith(12);
      await rewriteFile(changed.key, changed.rows.map((row) => (row.seq === 12 ? { ...row, query: `${row.query} ` } : row)));
      const swapped = await fileWith(5);
      const a = swapped.rows.find((row) => row.seq === 5) as TieredEvent;
      const b = swapped.rows.find((row) => row.seq === 6) as TieredEvent;
      await rewriteFile(swapped.key, swapped.rows.map((row) => (row.seq === 5 ? { ...b, seq: 5 } : row.seq === 6 ? { ...a, seq: 6 } : row)));
      const reference = await verifyHistory(offline(['--threads', '0']));
      expect(reference.breaks.map((b) => b.message)).toEqual([
        'reordered: the record at seq 5 (eventId ev-5) was chained at seq 6',
        'reordered: the record at seq 6 (eventId ev-4) was chained at seq 5',
        'chain broken at seq 7 (eventId ev-6): its chain_hash does not follow from seq 6 (records were replaced, or spliced from another chain)',
        'altered record at seq 12 (eventId ev-10): field query changed',
      ]);
      for (const threads of ['1', '3']) expect(await verifyHistory(offline(['--threads', threads]))).toEqual(reference);
    } finally {
      await restore();
    }
  });

  it("NULL written where a chained row held '' (the reader takes NULL for '', engines do not) is refused, naming the row and column", async () => {
    try {
      let target: { key: string; marker: CommitMarker; markerKey: string } | undefined;
      for (const { key: markerKey, marker } of await markers()) {
        for (const file of marker.files) if (target === undefined && (await readRows(file.key)).some((row) => row.query === '' && row.recordHash !== undefined)) target = { key: file.key, marker, markerKey };
      }
      expect(target).toBeDefined();
      const { key, marker, markerKey } = target!;
      const events = await readRows(key);
      const at = events.findIndex((row) => row.query === '' && row.recordHash !== undefined);
      const rows = auditRows(events).map((row, i) => (i === at ? { ...row, query: null } : row));
      const { columns, sketches } = auditColumnSources(rows as unknown as AuditRow[], 10_000, false);
      const bytes = assembleColumnChunks([encodeColumnChunks(columns, 10_000)], tierFileKvMetadata(undefined, sketches));
      await objects.put(key, bytes);
      for (const file of marker.files) if (file.key === key) file.bytes = bytes.byteLength;
      await objects.put(markerKey, JSON.stringify(marker));
      await expect(verifyHistory(offline())).rejects.toMatchObject({
        code: 'AUDIT_TABLE_INVALID',
        message: expect.stringContaining(`row ${at} (seq ${events[at]!.seq}) has NULL in query, which auditlake never writes into a chained row: altered (the record hash reads it as '', engines as NULL)`),
      });
    } finally {
      await restore();
    }
  });

  it('a data file that does not decode is exit 1 with the reason, on worker threads or not', async () => {
    try {
      const { key } = await fileWith(12);
      const bytes = await objects.get(key);
      await objects.put(key, bytes.map((byte, i) => (i > 8 && i < bytes.length - 8 ? byte ^ 0x5a : byte)));
      const embedded = node.embeddedS3 as EmbeddedS3;
      const args = ['--path', TIER_PATH, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey];
      for (const threads of ['0', '2']) {
        let stderr = '';
        const streams = { stdout: { write: () => true }, stderr: { write: (t: string) => (stderr += t) } };
        expect(await verifyCommand([...args, '--threads', threads], {}, streams)).toBe(1);
        expect(stderr).toMatch(/^auditlake verify: .+/);
      }
    } finally {
      await restore();
    }
  });

  it('a row without a seq added to a data file (a copy of an event with another user, which searches show) is an alteration, not a row from before the chain', async () => {
    try {
      const { key, rows } = await fileWith(12);
      const original = rows.find((row) => row.seq === 12) as TieredEvent;
      const { seq: _seq, term: _term, recordHash: _r, chainHash: _c, fieldCheck: _f, ...values } = original;
      await rewriteFile(key, [...rows, { ...values, userId: 'mallory' }]);
      for (const threads of ['0', '2']) {
        const report = await verifyHistory(offline(['--threads', threads]));
        expect(report).toMatchObject({ ok: false, rowsWithoutSeq: 1 });
        expect(report.message).toBe(`rows added to the tier: 1 tier row without a seq (eventId ${original.eventId}), in a tier whose rows start at seq 1, so none of them predates the seq column`);
      }
    } finally {
      await restore();
    }
  });

  it('rows copied within the tier are duplicated records (engines reading the tier count them twice), also read with the node; the node\'s copy of a tiered row is expected', async () => {
    const duplicated = /^duplicated record at seq 12 \(eventId ev-10\): the tier at s3:\/\/\S+ holds it more than once, so an engine reading it counts the event twice$/;
    const withNode = () => ({ ...offline(), node: { url: node.url, token: ADMIN_TOKEN } });
    // Untouched, the node's copies of tiered rows are no duplicates.
    expect((await verifyHistory(withNode())).ok).toBe(true);
    try {
      const { key, rows } = await fileWith(12);
      await rewriteFile(key, [...rows, ...rows.filter((row) => row.seq === 12)]);
      const report = await verifyHistory(offline());
      expect(report.ok).toBe(false);
      expect(report.message).toMatch(duplicated);
      // Read with the node (as with several tier locations) a copy within the tier is still one:
      // only copies across what is read are expected (review: it passed, "identical copies ignored").
      const both = await verifyHistory(withNode());
      expect(both.ok).toBe(false);
      expect(both.message).toMatch(duplicated);
    } finally {
      await restore();
    }
  });

  it('a row removed by rewriting its data file is missing records', async () => {
    try {
      const { key, rows } = await fileWith(14);
      await rewriteFile(key, rows.filter((row) => row.seq !== 14));
      expect((await verifyHistory(offline())).message).toBe('missing records: seq 14..14 (1 record)');
    } finally {
      await restore();
    }
  });

  it('a data file dropped from its commit is missing records', async () => {
    try {
      const [first] = await markers();
      const { key, marker } = first as { key: string; marker: CommitMarker };
      const dropped = marker.files.at(-1) as CommitMarker['files'][number];
      const rows = await readRows(dropped.key);
      marker.files = marker.files.filter((f) => f !== dropped);
      await objects.put(key, JSON.stringify(marker));
      const seqs = rows.map((row) => row.seq as number);
      const report = await verifyHistory(offline());
      expect(report.ok).toBe(false);
      expect(report.message).toMatch(new RegExp(`^missing records: seq ${Math.min(...seqs)}\\.\\.`));
    } finally {
      await restore();
    }
  });

  it('a tail cut after the last checkpoint is a truncated tail', async () => {
    try {
      const { key, rows } = await fileWith(30);
      const kept = rows.filter((row) => (row.seq as number) < 29);
      if (kept.length > 0) await rewriteFile(key, kept);
      else {
        // The file held only the tail: it is dropped from its commit.
        for (const { key: markerKey, marker } of await markers()) {
          if (marker.files.some((f) => f.key === key)) await objects.put(markerKey, JSON.stringify({ ...marker, files: marker.files.filter((f) => f.key !== key) }));
        }
      }
      expect((await verifyHistory(offline())).message).toMatch(/^truncated tail: the history ends at seq 28, but the newest commit marker of s3:\/\/auditlake\/tier ends at seq 30 \(2 missing\)$/);
    } finally {
      await restore();
    }
  });

  it('a tail cut before a checkpoint (markers rewritten too) is caught by the checkpoint object', async () => {
    try {
      await cutTierAfter(19);
      expect((await verifyHistory(offline())).message).toMatch(/^truncated tail: the history ends at seq 19, but the checkpoint in .*_integrity\/checkpoints\/0000000000000028\.json covers records up to seq 27 \(8 missing\)$/);
    } finally {
      await restore();
    }
  });

  it('two records swapped are reordered', async () => {
    try {
      const { key, rows } = await fileWith(5);
      const a = rows.find((row) => row.seq === 5) as TieredEvent;
      const b = rows.find((row) => row.seq === 6) as TieredEvent;
      expect(b).toBeDefined();
      await rewriteFile(key, rows.map((row) => (row.seq === 5 ? { ...b, seq: 5 } : row.seq === 6 ? { ...a, seq: 6 } : row)));
      expect((await verifyHistory(offline())).message).toMatch(/^reordered: the record at seq 5 \(eventId ev-5\) was chained at seq 6$/);
    } finally {
      await restore();
    }
  });

  it('a forged checkpoint (changed after signing) is a bad signature', async () => {
    try {
      const [found] = await checkpointObjects();
      const { key, checkpoint } = found as { key: string; checkpoint: SignedCheckpoint };
      await objects.put(key, encodeSignedCheckpoint({ ...checkpoint, timeMs: checkpoint.timeMs + 1 }));
      expect((await verifyHistory(offline())).message).toMatch(/^bad signature on the checkpoint at seq 9 \(s3:\/\/auditlake\/tier\/_integrity\/checkpoints\/0000000000000010\.json, keyId [0-9a-f]{16}\): forged or altered$/);
    } finally {
      await restore();
    }
  });

  it('a checkpoint signed by an unknown key is refused', async () => {
    try {
      const [found] = await checkpointObjects();
      const { key, checkpoint } = found as { key: string; checkpoint: SignedCheckpoint };
      const stranger = generateKeyPairSync('ed25519');
      const { signature: _old, ...unsigned } = checkpoint;
      void _old;
      const resigned = signCheckpoint({ ...unsigned, keyId: 'ffffffffffffffff' }, stranger.privateKey);
      await objects.put(key, encodeSignedCheckpoint(resigned));
      expect((await verifyHistory(offline())).message).toBe('checkpoint at seq 9 (s3://auditlake/tier/_integrity/checkpoints/0000000000000010.json) is signed by unknown key ffffffffffffffff (neither registered in the chain nor published)');
    } finally {
      await restore();
    }
  });

  it('a replaced public key is named', async () => {
    try {
      const [keyObject] = await objects.list(`${PREFIX}/_integrity/keys/`);
      const published = JSON.parse(new TextDecoder().decode(await objects.get(keyObject as string))) as Record<string, unknown>;
      published['publicKey'] = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
      await objects.put(keyObject as string, JSON.stringify(published));
      expect((await verifyHistory(offline())).message).toMatch(/^replaced public key: the key in .*_integrity\/keys\/0000000000000001\.json for keyId [0-9a-f]{16} has fingerprint [0-9a-f]{16}$/);
    } finally {
      await restore();
    }
  });

  it('a chain spliced from another cluster breaks where it starts', async () => {
    const otherDir = await mkdtemp(join(tmpdir(), 'auditlake-other-'));
    const other = await startAuditNode({ dataDir: otherDir, host: '127.0.0.1', port: 0, adminToken: ADMIN_TOKEN, config: resolveConfig(new Map()) });
    try {
      // Another cluster holds records with the same ids and values from seq 1 on.
      await fetch(`${other.url}/v1/api/audit`, { method: 'POST', headers: { authorization: `Token ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify([{ ...event(999) }, ...Array.from({ length: 30 }, (_, i) => event(i + 1))]) });
      const foreign = (await other.store.readBySeq(0, 100)) as unknown as TieredEvent[];
      const { key, rows } = await fileWith(12);
      const spliced = rows.map((row) => {
        const twin = foreign.find((f) => f.seq === row.seq);
        return (row.seq as number) >= 12 && twin !== undefined ? { ...twin } : row;
      });
      await rewriteFile(key, spliced);
      expect((await verifyHistory(offline())).message).toBe('chain broken at seq 12 (eventId ev-11): its chain_hash does not follow from seq 11 (records were replaced, or spliced from another chain)');
    } finally {
      await other.close();
      await rm(otherDir, { recursive: true, force: true });
      await restore();
    }
  });

  it('a checkpoint validly signed by the node key but linked past its predecessor breaks the checkpoint chain', async () => {
    try {
      const found = await checkpointObjects();
      const { key, checkpoint } = found[2] as { key: string; checkpoint: SignedCheckpoint };
      // The node's own private key (as an insider would have it): the signature is good, the link is not.
      const nodeKey = await loadOrCreateNodeKey(dataDir);
      const { signature: _old, ...unsigned } = checkpoint;
      void _old;
      const relinked = signCheckpoint({ ...unsigned, previousCheckpointHash: checkpointHash((found[0] as { checkpoint: SignedCheckpoint }).checkpoint) }, nodeKey.privateKey);
      await objects.put(key, encodeSignedCheckpoint(relinked));
      expect((await verifyHistory(offline())).message).toMatch(/^checkpoint chain broken at seq 27 \(.*0000000000000028\.json\): it does not follow the checkpoint at seq \d+ \(a checkpoint was removed or forged\)$/);
    } finally {
      await restore();
    }
  });
});

describe('checkpoint objects packed by maintenance', () => {
  let unpacked: Map<string, Uint8Array>;
  let packed: Map<string, Uint8Array>;
  let packKeys: string[];
  const PACKS = `${PREFIX}/_integrity/checkpoint-packs/`;
  beforeAll(async () => {
    unpacked = await snapshotTier();
    // The three checkpoint objects (record seqs 10, 19 and 28) in two packs, as a maintenance
    // run packs them (it waits for a thousand).
    expect(await packIntegrityCheckpoints(objects, PREFIX, { mayCommit: () => true }, { looseMin: 3, packSizeMax: 2, perRunMax: 3 })).toBe(3);
    expect(await objects.list(`${PREFIX}/_integrity/checkpoints/`)).toEqual([]);
    packKeys = await objects.list(PACKS);
    expect(packKeys).toHaveLength(2);
    expect(packKeys[0]).toMatch(/\/0000000000000010-0000000000000019-[0-9a-f]{16}\.json$/);
    expect(packKeys[1]).toMatch(/\/0000000000000028-0000000000000028-[0-9a-f]{16}\.json$/);
    packed = await snapshotTier();
  });
  afterAll(async () => {
    for (const key of await objects.list(PACKS)) await objects.delete(key);
    await restoreTier(unpacked);
  });
  const restore = async () => {
    await restoreTier(packed);
    expect((await verifyHistory(offline())).ok).toBe(true);
  };

  it('verify reads them as it read the loose objects', async () => {
    const head = node.store.chainHead.seq;
    expect((await verifyHistory(offline())).message).toBe(`verified ${head} records, seq 1..${head}, 3 checkpoints`);
  });

  it('a packed checkpoint changed after signing is a bad signature, naming the pack', async () => {
    try {
      const key = packKeys[0] as string;
      const pack = JSON.parse(new TextDecoder().decode(await objects.get(key))) as { checkpoints: Array<{ seq: number; checkpoint: string }> };
      const first = pack.checkpoints[0] as { seq: number; checkpoint: string };
      const checkpoint = parseSignedCheckpoint(first.checkpoint);
      first.checkpoint = encodeSignedCheckpoint({ ...checkpoint, timeMs: checkpoint.timeMs + 1 });
      await objects.put(key, JSON.stringify(pack));
      expect((await verifyHistory(offline())).message).toMatch(/^bad signature on the checkpoint at seq 9 \(s3:\/\/auditlake\/tier\/_integrity\/checkpoint-packs\/0000000000000010-0000000000000019-[0-9a-f]{16}\.json \(record seq 10\), keyId [0-9a-f]{16}\): forged or altered$/);
    } finally {
      await restore();
    }
  });

  it('a tail cut before a checkpoint (markers rewritten too) is caught by the packed checkpoint', async () => {
    try {
      await cutTierAfter(19);
      expect((await verifyHistory(offline())).message).toBe(`truncated tail: the history ends at seq 19, but the checkpoint in s3://auditlake/${packKeys[1]} (record seq 28) covers records up to seq 27 (8 missing)`);
    } finally {
      await restore();
    }
  });

  it('a damaged pack is exit 1, naming it', async () => {
    try {
      await objects.put(packKeys[1] as string, '{"format":"auditlake-checkpoint-pack/1","checkpoints":[');
      const embedded = node.embeddedS3 as EmbeddedS3;
      let stderr = '';
      const streams = { stdout: { write: () => true }, stderr: { write: (t: string) => (stderr += t) } };
      const args = ['--path', TIER_PATH, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey];
      expect(await verifyCommand(args, {}, streams)).toBe(1);
      expect(stderr).toContain(`the checkpoint pack s3://auditlake/${packKeys[1]} is damaged: `);
    } finally {
      await restore();
    }
  });
});

/** The tiered rows of a file's events other than `user`'s, for a sketch that leaves that user out. */
function encodeRowsWithout(rows: TieredEvent[], user: string) {
  return rows.filter((row) => row.userId !== user).map((row) => ({ decision: row.decision, user_id: row.userId, source: row.source, action: row.action, resource: row.resource, tables: row.tables.join(','), query: row.query, details: row.details })) as unknown as Parameters<typeof RowGroupSketch.of>[0];
}
