// Goal: a healthy node whose tiered records retention deleted, every one of them, verifies — from
// the bucket alone, online and as one. Two ways this failed: the next checkpoint after retention
// deleted every checkpoint record started a new chain of checkpoints (offline: "belongs to another
// chain"), and online the history was taken to end at its last record held, not at the end of the
// ranges the node declares deleted after it ("truncated tail"). And the node's deleted ranges
// excuse nothing the tier must hold: a row removed from a tier file is missing, read as one too.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesSource, encodeAuditParquet, readAuditParquet } from '@auditlake/format';
import { checkpointHash } from '@auditlake/integrity';
import { COMMITS_DIR, type CommitMarker, type ObjectStore } from '@auditlake/lake';
import type { AuditNode } from '@auditlake/server';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { parseVerifyOptions } from '../src/verify-options.js';
import { adminRequest, selectEvent, embeddedS3Connections, ingestAll, offlineVerifyOptions, parquetTier, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-verify-retention-tail';
const TIER = 's3://auditlake/audit';

let node: AuditNode | undefined;
let dataDir: string | undefined;

afterEach(async () => {
  await node?.close();
  node = undefined;
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

/** Until the tier holds the whole log and retention deleted all of it here. */
async function waitUntilTieredAndPruned(target: AuditNode): Promise<void> {
  const head = target.store.chainHead.seq;
  await waitFor(`tiering and retention through seq ${head}`, async () => (await target.tiering.watermark()).seq >= head && (await target.store.readBySeq(0, 1)).length === 0 && target.store.prunedRanges.some((r) => r.toSeq === head), 60_000);
}

describe('verify after retention deleted every record of a tiered node', () => {
  it('passes offline, online and as one, with one chain of checkpoints', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'auditlake-verify-retention-tail-'));
    node = await startTieringNode(dataDir, {
      adminToken: ADMIN_TOKEN,
      props: {
        ...parquetTier(TIER),
        'auditlake.audit.tier.retain.local.days': '0',
        'auditlake.audit.retention.interval.ms': '100',
      },
    });
    const target = node;
    const offline = () => verifyHistory(offlineVerifyOptions(target, ['--path', TIER], ['--threads', '0']));
    const nodeArgs = ['--url', target.url, '--token', ADMIN_TOKEN, '--threads', '0'];
    const online = () => verifyHistory(parseVerifyOptions(nodeArgs, {}));
    const both = () => verifyHistory(offlineVerifyOptions(target, ['--path', TIER], nodeArgs));

    await ingestAll(target, ADMIN_TOKEN, [selectEvent('a1'), selectEvent('a2')]);
    const first = await target.integrity.checkpointNow();
    expect(first).toBeDefined();
    await waitUntilTieredAndPruned(target);
    // Online with nothing held: the node declares 1..head deleted and still shows its newest checkpoint.
    let head = target.store.chainHead.seq;
    const emptied = await online();
    expect(emptied.message).toBe(`verified 0 records, no records, 1 checkpoint; ${head} records removed by retention`);
    expect(emptied.ok).toBe(true);

    await ingestAll(target, ADMIN_TOKEN, [selectEvent('b1')]);
    const second = await target.integrity.checkpointNow();
    // The same chain of checkpoints, linked to the one whose record retention deleted.
    expect(second?.chainId).toBe(first?.chainId);
    expect(second?.previousCheckpointHash).toBe(checkpointHash(first!));
    await waitUntilTieredAndPruned(target);
    head = target.store.chainHead.seq;

    const fromBucket = await offline();
    expect(fromBucket.message).toBe(`verified ${head} records, seq 1..${head}, 2 checkpoints`);
    expect(fromBucket.ok).toBe(true);
    const fromNode = await online();
    expect(fromNode.message).toBe(`verified 0 records, no records, 1 checkpoint; ${head} records removed by retention`);
    expect(fromNode.ok).toBe(true);
    const asOne = await both();
    expect(asOne.message).toBe(`verified ${head} records, seq 1..${head}, 2 checkpoints`);
    expect(asOne.ok).toBe(true);

    // The integrity listing agrees: one chainId, the newest checkpoint kept though its record is gone.
    const view = (await (await adminRequest(target, ADMIN_TOKEN, '/admin/audit/integrity')).json()) as { chainId: string; checkpoints: unknown[] };
    expect(view.chainId).toBe(first?.chainId);
    expect(view.checkpoints).toHaveLength(1);

    // A row removed from a tier file, its commit's count edited to match: the node deleted its own
    // copy, but retention deletes only what was tiered, so the tier must hold it. Missing records
    // from the bucket alone, and as one — where the node's deleted range used to excuse it.
    const connections = embeddedS3Connections(target);
    try {
      const objects = connections.bucket('t', 'auditlake');
      const removed = await removeTieredRow(objects, 'audit', 2);
      expect((await offline()).message).toMatch(/^missing records: seq 2\.\.2/);
      const tampered = await both();
      expect(tampered.message).toMatch(/^missing records: seq 2\.\.2/);
      expect(tampered.ok).toBe(false);
      await removed.restore();
      expect((await both()).ok).toBe(true);

      // The same at the tier's start: its first row removed. The tier then seems to begin at seq
      // 2, and seq 1 seemed deleted before tiering began, which the node's range excused. The
      // node keeps the seqs it tiered to each location, so as one it is missing.
      const headCut = await removeTieredRow(objects, 'audit', 1);
      const cut = await both();
      expect(cut.message).toMatch(/^missing records: seq 1\.\.1/);
      expect(cut.ok).toBe(false);
      await headCut.restore();
      expect((await both()).ok).toBe(true);
    } finally {
      connections.close();
    }
  });
});

/** Removes the row at `seq` from the tier file holding it and edits that file's commit marker to match (rows, size, time bounds); `restore` puts both back. */
async function removeTieredRow(objects: ObjectStore, prefix: string, seq: number): Promise<{ restore: () => Promise<void> }> {
  for (const markerKey of await objects.list(`${prefix}/${COMMITS_DIR}/`)) {
    const markerBytes = await objects.get(markerKey);
    const marker = JSON.parse(new TextDecoder().decode(markerBytes)) as CommitMarker;
    for (const file of marker.files) {
      const original = await objects.get(file.key);
      const rows = await readAuditParquet(bytesSource(original));
      if (!rows.some((row) => row.seq === seq)) continue;
      const kept = rows.filter((row) => row.seq !== seq);
      const bytes = encodeAuditParquet(kept);
      await objects.put(file.key, bytes);
      Object.assign(file, { rows: kept.length, bytes: bytes.byteLength, tsMin: Math.min(...kept.map((row) => row.timestamp)), tsMax: Math.max(...kept.map((row) => row.timestamp)) });
      await objects.put(markerKey, JSON.stringify(marker));
      return {
        restore: async () => {
          await objects.put(file.key, original);
          await objects.put(markerKey, markerBytes);
        },
      };
    }
  }
  throw new Error(`no tier file holds seq ${seq}`);
}
