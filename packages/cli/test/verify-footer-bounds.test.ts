// Goal: a Parquet tier file that no commit marker bounds (a compaction's output) is placed in
// verify's one seq-ordered pass by its footer's `seq` statistics, read with one ranged GET of
// its end (FOOTER_FETCH_BYTES) before the file is fetched whole once; a footer whose `seq` statistics lie — however
// far the lie moves the file in that order — is refused naming the file, the row group, the
// column and a row outside them, read alone or with the node; one without them is read twice
// (checked, then again in seq order) and verifies as before. A real node tiering to its
// embedded S3 endpoint, compacted by a real maintenance run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesSource, FOOTER_FETCH_BYTES, ParquetFileAssembler, readAuditParquetFooter, rowGroupSketches, type RowGroupSketch } from '@auditlake/format';
import { liveParquetFiles, parseS3Location, readParquetLog, type ObjectStore, type S3Connections } from '@auditlake/lake';
import type { AuditNode, EmbeddedS3 } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { startCountingProxy, type CountingProxy } from './counting-proxy.js';
import { adminRequest, embeddedS3Connections, ingestAll, offlineVerifyOptions, parquetTier, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-footer-bounds';
const PREFIX = 'compacted';
const TIER_PATH = `s3://auditlake/${PREFIX}`;
const DAY_MS = 86_400_000;
const DAYS = 4;

let dataDir: string;
let node: AuditNode;
let connections: S3Connections;
let objects: ObjectStore;
let proxy: CountingProxy;
/** The live files a compaction marker added, and those a commit marker did. */
let compacted: string[];
let committed: string[];

const offline = (extra: string[] = []) => offlineVerifyOptions(node, ['--path', TIER_PATH], extra, proxy.endpoint);
const withNode = (extra: string[] = []) => ({ ...offline(extra), node: { url: node.url, token: ADMIN_TOKEN } });

async function waitUntilTiered(): Promise<void> {
  const head = node.store.chainHead.seq;
  await waitFor(`tiering up to seq ${head}`, async () => (await node.tiering.watermark()).seq >= head);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'auditlake-verify-footer-bounds-'));
  node = await startTieringNode(dataDir, { adminToken: ADMIN_TOKEN, props: parquetTier(TIER_PATH) });
  connections = embeddedS3Connections(node);
  objects = connections.bucket('t', 'auditlake');
  await node.integrity.registerKey();
  // Five commits of events interleaved over four days (a small file per day each), then a
  // maintenance run compacts each day's files into one holding seqs from every commit.
  const firstDay = Math.floor(Date.now() / DAY_MS) - DAYS - 1;
  for (let commit = 0; commit < 5; commit++) {
    await ingestAll(
      node,
      ADMIN_TOKEN,
      Array.from({ length: 8 }, (_, k) => {
        const i = commit * 8 + k;
        return { eventId: `ev-${i}`, userId: `user-${i % 3}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `SELECT ${i}`, ts: (firstDay + (i % DAYS)) * DAY_MS + i * 1000 };
      }),
    );
    await waitUntilTiered();
  }
  const res = await adminRequest(node, ADMIN_TOKEN, '/admin/audit/maintenance/run', { method: 'POST', body: JSON.stringify({ table: TIER_PATH }) });
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ ok: true, error: null });
  // No scheduled run (hourly, at minute 0) changes the files the tests edit and put back.
  const off = await adminRequest(node, ADMIN_TOKEN, '/admin/audit/settings', { method: 'POST', body: JSON.stringify({ 'audit.tier.maintenance.enabled': false }) });
  expect(off.status).toBe(200);
  // More commits after it, beside the compacted files.
  await ingestAll(node, ADMIN_TOKEN, [{ eventId: 'late', userId: 'user-0', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: 'SELECT late', ts: Date.now() }]);
  expect(await node.integrity.checkpointNow()).toBeDefined();
  await waitUntilTiered();
  const log = await readParquetLog(objects, parseS3Location(TIER_PATH)!, undefined, { fromCheckpoint: false });
  const inMarkers = new Set(log.markers.flatMap((marker) => marker.files.map((file) => file.key)));
  const live = liveParquetFiles(log).files.map((file) => file.key);
  compacted = live.filter((key) => !inMarkers.has(key));
  committed = live.filter((key) => inMarkers.has(key));
  proxy = await startCountingProxy((node.embeddedS3 as EmbeddedS3).connectionUrl);
}, 180_000);

afterAll(async () => {
  await proxy?.close();
  connections?.close();
  await node?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** The compacted file holding `seq`: its key, bytes and footer (statistics as stored). */
async function compactedHolding(seq: number): Promise<{ key: string; bytes: Uint8Array; footer: Awaited<ReturnType<typeof readAuditParquetFooter>> }> {
  for (const key of compacted) {
    const bytes = await objects.get(key);
    const footer = await readAuditParquetFooter(bytesSource(bytes), { exactStatistics: true });
    const stats = seqStatistics(footer);
    if (Number(stats.min_value) <= seq && seq <= Number(stats.max_value)) return { key, bytes, footer };
  }
  throw new Error(`no compacted file holds seq ${seq}`);
}

function seqStatistics(footer: Awaited<ReturnType<typeof readAuditParquetFooter>>) {
  const statistics = footer.row_groups[0]?.columns.find((column) => column.meta_data?.path_in_schema[0] === 'seq')?.meta_data?.statistics;
  if (statistics === undefined) throw new Error('the file has no seq statistics');
  return statistics;
}

/** The file's pages copied byte for byte under its footer as the caller altered it. */
function reassembled(bytes: Uint8Array, footer: Awaited<ReturnType<typeof readAuditParquetFooter>>): Uint8Array {
  const sketches = rowGroupSketches(footer) as RowGroupSketch[];
  const assembler = new ParquetFileAssembler();
  footer.row_groups.forEach((_, index) => assembler.addRowGroup({ bytes, footer, index, sketch: sketches[index] as RowGroupSketch }));
  return assembler.finish();
}

describe('a compacted Parquet file is placed in the seq order by its footer', () => {
  it('each compacted file: one ranged GET of its footer, then fetched whole once; every other file fetched once; alone and with the node', async () => {
    expect(compacted.length).toBe(DAYS);
    expect(committed.length).toBeGreaterThan(0);
    for (const options of [offline(), withNode()]) {
      proxy.clear();
      const report = await verifyHistory(options);
      expect(report.ok).toBe(true);
      expect(report.message).toMatch(new RegExp(`^verified ${node.store.chainHead.seq} records, seq 1\\.\\.${node.store.chainHead.seq}, 1 checkpoint`));
      for (const key of compacted) {
        const gets = proxy.requests.filter((request) => request.method === 'GET' && request.path === `/auditlake/${key}`);
        expect(gets).toHaveLength(2);
        const size = (await objects.get(key)).byteLength;
        // The footer first (the file's last FOOTER_FETCH_BYTES, all of a file this small), then the whole file.
        expect(gets[0]?.range).toBe(`bytes=${Math.max(0, size - FOOTER_FETCH_BYTES)}-${size - 1}`);
        expect(gets[1]?.range).toBe(`bytes=0-${size - 1}`);
      }
      for (const key of committed) expect(proxy.getsOf(key).get(`auditlake/${key}`)).toBe(1);
    }
  });

  it("a footer whose seq statistics lie is refused, naming the file, the row group and a row outside them, however far the lie moves the file", async () => {
    const { key, bytes, footer } = await compactedHolding(10);
    const statistics = seqStatistics(footer);
    const [least, greatest] = [statistics.min_value as bigint, statistics.max_value as bigint];
    expect(least).toBeLessThan(greatest);
    try {
      // The least raised to the greatest: the file is placed after records that follow its least seq.
      statistics.min_value = greatest;
      await objects.put(key, reassembled(bytes, footer));
      const raised = {
        code: 'AUDIT_INTEGRITY_MISMATCH',
        message: `tier file ${key}: row group 0: column seq: its statistics declare a least value of ${greatest}; the row with seq ${least} is outside it: a search that skips row groups by their footer statistics would miss it; the file's footer was altered`,
      };
      for (const options of [offline(), offline(['--threads', '2']), withNode()]) await expect(verifyHistory(options)).rejects.toMatchObject(raised);
      statistics.min_value = least;
      // The greatest lowered to the least.
      statistics.max_value = least;
      await objects.put(key, reassembled(bytes, footer));
      for (const options of [offline(), withNode()]) {
        await expect(verifyHistory(options)).rejects.toMatchObject({
          code: 'AUDIT_INTEGRITY_MISMATCH',
          // The first row above it in the file's order (by event time).
          message: expect.stringMatching(new RegExp(`^tier file ${key}: row group 0: column seq: its statistics declare a greatest value of ${least}; the row with seq \\d+ is outside it: a search that skips row groups by their footer statistics would miss it; the file's footer was altered$`)),
        });
      }
    } finally {
      await objects.put(key, bytes);
    }
    expect((await verifyHistory(offline())).ok).toBe(true);
  });

  it('a footer without seq statistics: the file is checked, then again in seq order, and the report is unchanged', async () => {
    const untouched = await verifyHistory(offline());
    const untouchedWithNode = await verifyHistory(withNode());
    const { key, bytes, footer } = await compactedHolding(10);
    const chunk = footer.row_groups[0]?.columns.find((column) => column.meta_data?.path_in_schema[0] === 'seq')?.meta_data;
    if (chunk === undefined) throw new Error('no seq column chunk');
    delete chunk.statistics;
    try {
      await objects.put(key, reassembled(bytes, footer));
      proxy.clear();
      expect(await verifyHistory(offline())).toEqual(untouched);
      // Its footer, then whole twice.
      expect(proxy.getsOf(key).get(`auditlake/${key}`)).toBe(3);
      expect(await verifyHistory(withNode())).toEqual(untouchedWithNode);
    } finally {
      await objects.put(key, bytes);
    }
  });
});
