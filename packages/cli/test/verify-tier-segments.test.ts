// Goal: a node read with its tier excuses, of the seqs its retention deleted, exactly those no
// tier read must hold. The node lists the seq ranges its sweeps committed to each location
// (tierSegments); records deleted while tiering was off are in none of them and stay excused,
// where judging by the tier's rows alone (its least seq to its head) called them missing; and the
// first rows of a segment removed from the tier are missing (verify-retention-tail.test.ts cuts
// the very first row).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMITS_DIR, type CommitMarker } from '@auditlake/lake';
import type { AuditNode } from '@auditlake/server';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { adminRequest, embeddedS3Connections, selectEvent, ingestAll, offlineVerifyOptions, parquetTier, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-verify-tier-segments';
const TIER = 's3://auditlake/segments';

interface Mode {
  mode: 'parquet' | 'iceberg';
  settings: Record<string, string>;
  flag: '--path' | '--table';
}

const MODES: Mode[] = [
  { mode: 'parquet', settings: parquetTier(TIER), flag: '--path' },
  { mode: 'iceberg', settings: { 'auditlake.audit.tier.mode': 'iceberg', 'auditlake.audit.tier.iceberg.table': 'local.audit.events' }, flag: '--table' },
];
const DAY_MS = 86_400_000;

let node: AuditNode | undefined;
let dataDir: string | undefined;

afterEach(async () => {
  await node?.close();
  node = undefined;
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

async function setSettings(target: AuditNode, settings: Record<string, unknown>): Promise<void> {
  const res = await adminRequest(target, ADMIN_TOKEN, '/admin/audit/settings', { method: 'POST', body: JSON.stringify(settings) });
  expect(res.status, await res.clone().text()).toBe(200);
}

interface Segment {
  url: string;
  fromSeq: number;
  toSeq: number;
}

/** Whether the node's retention deleted `seq`. */
function prunedAt(target: AuditNode, seq: number): boolean {
  return target.store.prunedRanges.some((range) => range.fromSeq <= seq && seq <= range.toSeq);
}

/** Waits until the node has tiered `seq` and its retention deleted it here. */
async function tieredAndDeleted(target: AuditNode, seq: number, what: string): Promise<void> {
  await waitFor(what, async () => (await target.tiering.watermark()).seq >= seq && prunedAt(target, seq));
}

async function segmentsOf(target: AuditNode): Promise<Segment[]> {
  const view = (await (await adminRequest(target, ADMIN_TOKEN, '/admin/audit/integrity')).json()) as { tierSegments: Segment[] };
  return view.tierSegments;
}

/** Where the tier is, as verify is told: a Parquet path, or the table's location as maintenance lists it. */
async function tierLocation(target: AuditNode, mode: Mode): Promise<string> {
  if (mode.mode === 'parquet') return TIER;
  const listed = (await (await adminRequest(target, ADMIN_TOKEN, '/admin/audit/maintenance')).json()) as { registrations: Array<{ table: string; location: string }> };
  return listed.registrations.find((r) => r.table === 'local.audit.events')?.location as string;
}

describe.each(MODES)('verify with the seqs a node tiered to each location, $mode tier', (mode) => {
  it('excuses what retention deleted while tiering was off, which no segment holds', async () => {
    dataDir = await mkdtemp(join(tmpdir(), `auditlake-verify-tier-segments-${mode.mode}-`));
    node = await startTieringNode(dataDir, {
      adminToken: ADMIN_TOKEN,
      props: {
        ...mode.settings,
        'auditlake.audit.tier.retain.local.days': '0',
        'auditlake.audit.retention.days': '1',
        'auditlake.audit.retention.interval.ms': '100',
      },
    });
    const target = node;
    let location = '';
    const both = () => verifyHistory(offlineVerifyOptions(target, [mode.flag, location], ['--url', target.url, '--token', ADMIN_TOKEN, '--threads', '0']));

    await ingestAll(target, ADMIN_TOKEN, [selectEvent('a1'), selectEvent('a2')]);
    const firstHead = target.store.chainHead.seq;
    await tieredAndDeleted(target, firstHead, 'the first events tiered and deleted here');
    location = await tierLocation(target, mode);
    expect(location).toMatch(/^s3:\/\/auditlake\//);
    expect(await segmentsOf(target)).toEqual([{ url: location, fromSeq: 1, toSeq: (await target.tiering.watermark()).seq }]);

    // Tiering off: retention deletes by event time alone, so these two old events go untiered.
    await setSettings(target, { 'audit.tier.mode': 'none' });
    await ingestAll(target, ADMIN_TOKEN, [selectEvent('old1', 3 * DAY_MS), selectEvent('old2', 3 * DAY_MS)]);
    const oldHead = target.store.chainHead.seq;
    await waitFor('the old events deleted untiered', async () => prunedAt(target, oldHead));
    await setSettings(target, { 'audit.tier.mode': mode.mode });
    await ingestAll(target, ADMIN_TOKEN, [selectEvent('c1')]);
    const head = target.store.chainHead.seq;
    await tieredAndDeleted(target, head, 'tiering again, and retention after it');

    // Two segments: the seqs between them (the old events, and the settings record turning
    // tiering off, which retention deleted with them) were never tiered.
    const segments = await segmentsOf(target);
    expect(segments).toHaveLength(2);
    expect(segments[0]?.toSeq).toBeLessThan(oldHead);
    expect(segments[1]?.fromSeq).toBeGreaterThan(oldHead);
    expect(segments[1]?.toSeq).toBe(head);
    const report = await both();
    expect(report.message).toMatch(new RegExp(`^verified \\d+ records, seq 1\\.\\.${head}, \\d+ checkpoints?; \\d+ records? removed by retention$`));
    expect(report.ok).toBe(true);
  });
});

describe('verify with the seqs a node tiered, at the bounds of what it lists', () => {
  const props = { ...parquetTier(TIER), 'auditlake.audit.tier.retain.local.days': '0', 'auditlake.audit.retention.days': '1', 'auditlake.audit.retention.interval.ms': '100' };
  const both = (target: AuditNode) => verifyHistory(offlineVerifyOptions(target, ['--path', TIER], ['--url', target.url, '--token', ADMIN_TOKEN, '--threads', '0']));
  const startNode = async (name: string): Promise<AuditNode> => {
    dataDir = await mkdtemp(join(tmpdir(), `auditlake-verify-segments-${name}-`));
    node = await startTieringNode(dataDir, { adminToken: ADMIN_TOKEN, props });
    return node;
  };

  it('past the newest 1,000 ranges (one batch after 1,100 islands retention deleted untiered), what the dropped ones covered is excused', async () => {
    const target = await startNode('cap');
    await ingestAll(target, ADMIN_TOKEN, [selectEvent('a1'), selectEvent('a2')]);
    const firstHead = target.store.chainHead.seq;
    await tieredAndDeleted(target, firstHead, 'tiered and deleted');
    await setSettings(target, { 'audit.tier.mode': 'none' });
    // Late events (three days old) between current ones: retention deletes every other one.
    const events: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 1_100; i++) events.push(selectEvent(`late${i}`, 3 * DAY_MS), selectEvent(`now${i}`));
    await ingestAll(target, ADMIN_TOKEN, events);
    const lastLate = target.store.chainHead.seq - 1;
    await waitFor('the late events deleted untiered', async () => prunedAt(target, lastLate));
    await setSettings(target, { 'audit.tier.mode': 'parquet' });
    const head = target.store.chainHead.seq;
    await tieredAndDeleted(target, head, 'tiered again, and deleted');
    const view = (await (await adminRequest(target, ADMIN_TOKEN, '/admin/audit/integrity')).json()) as { tierSegments: Segment[]; tierSegmentsCutThrough: number | null };
    expect(view.tierSegments).toHaveLength(1_000);
    expect(view.tierSegmentsCutThrough).toBeGreaterThan(firstHead);
    expect(view.tierSegmentsCutThrough).toBeLessThan(view.tierSegments[0]!.fromSeq);
    const report = await both(target);
    expect(report.message).toMatch(new RegExp(`^verified \\d+ records, seq 1\\.\\.${head}, \\d+ checkpoints?; \\d+ records? removed by retention$`));
    expect(report.ok).toBe(true);
  }, 120_000);

  it('the tier\'s newest commit removed, after the node deleted its records: missing, though the tier then seems to end before them', async () => {
    const target = await startNode('tail');
    await ingestAll(target, ADMIN_TOKEN, [selectEvent('a1'), selectEvent('a2')]);
    await tieredAndDeleted(target, target.store.chainHead.seq, 'the first commit tiered and deleted');
    await ingestAll(target, ADMIN_TOKEN, [selectEvent('b1'), selectEvent('b2'), selectEvent('b3')]);
    await tieredAndDeleted(target, target.store.chainHead.seq, 'the second commit tiered and deleted');
    // No more commits: what the test removes stays removed.
    await setSettings(target, { 'audit.tier.mode': 'none' });
    expect((await both(target)).ok).toBe(true);
    const connections = embeddedS3Connections(target);
    try {
      const objects = connections.bucket('t', 'auditlake');
      const newest = (await objects.list(`segments/${COMMITS_DIR}/`)).sort().at(-1) as string;
      const marker = JSON.parse(new TextDecoder().decode(await objects.get(newest))) as CommitMarker;
      for (const file of marker.files) await objects.delete(file.key);
      await objects.delete(newest);
      const report = await both(target);
      expect(report.message).toMatch(new RegExp(`^missing records: seq ${marker.firstSeq}\\.\\.`));
      expect(report.ok).toBe(false);
    } finally {
      connections.close();
    }
  }, 120_000);
});
