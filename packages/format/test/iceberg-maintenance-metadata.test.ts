// Goal: the metadata of maintenance commits follows the spec — a replace snapshot keeps total-records and moves the file totals, a manifest rewrite records its manifest counts, expiry keeps the newest N, the current snapshot, every ref's and the way back to the newest snapshot carrying the watermark, and trims the snapshot-log, the metadata-log is cut to its limit — and a replace that would change the rows is refused.
import { describe, expect, it } from 'vitest';
import {
  appendSnapshot,
  checkTableMetadata,
  COMMITTED_AT_SUMMARY_KEY,
  dropRefsOffCurrent,
  expireSnapshots,
  newTableMetadata,
  NODE_CLOCK_SKEW_MAX_MS,
  readWatermarkFromMetadata,
  replaceSnapshot,
  retainedSnapshotIds,
  SNAPSHOT_CLOCK_AHEAD_TOLERANCE_MS,
  snapshotAncestry,
  snapshotMadeAtMs,
  trimMetadataLog,
  watermarkSummary,
  type IcebergSnapshot,
  type IcebergTableMetadata,
} from '../src/index.js';

const LOCATION = 's3://audit-bucket/warehouse/audit/events';
const UUID = '9c6f2b1e-4f0a-4c57-9a1e-2b7d3f1a8c40';
const T0 = 1_714_564_800_000;
const metadataPath = (version: number): string => `${LOCATION}/metadata/v${version}.metadata.json`;
const listPath = (id: number): string => `${LOCATION}/metadata/snap-${id}-1-x.avro`;

/** A table after `appends` appends of 10 rows in one 1,000-byte file each. */
function appended(appends: number): IcebergTableMetadata {
  let metadata = newTableMetadata({ location: LOCATION, tableUuid: UUID, nowMs: T0 });
  for (let v = 1; v <= appends; v++) {
    metadata = appendSnapshot(metadata, {
      snapshotId: 1000 + v,
      manifestListPath: listPath(1000 + v),
      nowMs: T0 + v,
      addedFiles: { records: 10, files: 1, sizeBytes: 1000, partitions: 1 },
      previousMetadataPath: metadataPath(v),
      summaryExtra: watermarkSummary({ seq: BigInt(10 * v), writerId: 'w', leaderTerm: 1 }),
    });
  }
  return metadata;
}

/** `metadata` compacted (all its files into one), snapshot 2000, committed by a clock at `nowMs`. */
function compactedAt(metadata: IcebergTableMetadata, nowMs: number): IcebergTableMetadata {
  const files = metadata.snapshots.length;
  return replaceSnapshot(metadata, {
    snapshotId: 2000,
    manifestListPath: listPath(2000),
    nowMs,
    previousMetadataPath: metadataPath(files + 1),
    addedFiles: { records: 10 * files, files: 1, sizeBytes: 1000 * files, partitions: 1 },
    deletedFiles: { records: 10 * files, files, sizeBytes: 1000 * files },
    summaryExtra: watermarkSummary({ seq: BigInt(10 * files), writerId: 'w', leaderTerm: 1 }),
  });
}

/** `metadata` with one more append, snapshot `snapshotId`, committed by a clock at `nowMs`. */
function appendOne(metadata: IcebergTableMetadata, snapshotId: number, nowMs: number): IcebergTableMetadata {
  return appendSnapshot(metadata, { snapshotId, manifestListPath: listPath(snapshotId), nowMs, addedFiles: { records: 1, files: 1, sizeBytes: 10, partitions: 1 }, previousMetadataPath: metadataPath(snapshotId), summaryExtra: watermarkSummary({ seq: BigInt(snapshotId), writerId: 'w', leaderTerm: 1 }) });
}

describe('replaceSnapshot', () => {
  it('records a compaction: same rows, fewer files, totals moved, watermark carried', () => {
    const before = appended(5);
    const parent = before.snapshots.at(-1)!;
    const after = replaceSnapshot(before, {
      snapshotId: 2000,
      manifestListPath: listPath(2000),
      nowMs: T0 + 100,
      previousMetadataPath: metadataPath(6),
      addedFiles: { records: 50, files: 1, sizeBytes: 4000, partitions: 1 },
      deletedFiles: { records: 50, files: 5, sizeBytes: 5000 },
      summaryExtra: watermarkSummary({ seq: 50n, writerId: 'w', leaderTerm: 1 }),
    });
    const snapshot = after.snapshots.at(-1)!;
    expect(snapshot['sequence-number']).toBe(6);
    expect(snapshot['parent-snapshot-id']).toBe(parent['snapshot-id']);
    expect(snapshot.summary).toMatchObject({
      operation: 'replace',
      'added-data-files': '1',
      'deleted-data-files': '5',
      'added-records': '50',
      'deleted-records': '50',
      'added-files-size': '4000',
      'removed-files-size': '5000',
      'total-records': '50',
      'total-data-files': '1',
      'total-files-size': '4000',
    });
    expect(readWatermarkFromMetadata(after)?.seq).toBe(50n);
    expect(checkTableMetadata(JSON.parse(JSON.stringify(after)))).toEqual([]);
  });

  it('records a manifest rewrite: no data change, manifest counts', () => {
    const after = replaceSnapshot(appended(3), {
      snapshotId: 2000,
      manifestListPath: listPath(2000),
      nowMs: T0 + 100,
      previousMetadataPath: metadataPath(4),
      addedFiles: { records: 0, files: 0, sizeBytes: 0, partitions: 0 },
      deletedFiles: { records: 0, files: 0, sizeBytes: 0 },
      manifests: { created: 1, replaced: 3, kept: 0, entriesProcessed: 3 },
    });
    expect(after.snapshots.at(-1)!.summary).toMatchObject({ operation: 'replace', 'manifests-created': '1', 'manifests-replaced': '3', 'manifests-kept': '0', 'entries-processed': '3', 'total-records': '30', 'total-data-files': '3' });
  });

  it('refuses a replace whose added and deleted rows differ', () => {
    expect(() =>
      replaceSnapshot(appended(2), {
        snapshotId: 2000,
        manifestListPath: listPath(2000),
        nowMs: T0,
        previousMetadataPath: metadataPath(3),
        addedFiles: { records: 19, files: 1, sizeBytes: 1, partitions: 1 },
        deletedFiles: { records: 20, files: 2, sizeBytes: 2 },
      }),
    ).toThrow(/added-records 19 must equal deleted-records 20/);
  });
});

describe('dropRefsOffCurrent', () => {
  it('drops every branch and tag but main on a snapshot made before the current one, so expiry no longer keeps it; one on the current snapshot or after it stays', () => {
    const base = appended(5);
    // A write-audit-publish branch another engine made on top of the current snapshot (1005), not published.
    const wap = appendSnapshot(base, { snapshotId: 2001, manifestListPath: listPath(2001), nowMs: T0 + 2001, addedFiles: { records: 1, files: 1, sizeBytes: 10, partitions: 1 }, previousMetadataPath: metadataPath(6) });
    const before = { ...wap, 'current-snapshot-id': 1005, refs: { main: { 'snapshot-id': 1005, type: 'branch' as const } } };
    const refs = { ...before.refs, audit2025: { 'snapshot-id': 1002, type: 'tag' as const }, audit: { 'snapshot-id': 1003, type: 'branch' as const }, latest: { 'snapshot-id': 1005, type: 'tag' as const }, wap: { 'snapshot-id': 2001, type: 'branch' as const } };
    const tagged = { ...before, refs };
    const after = dropRefsOffCurrent(tagged, { nowMs: T0, previousMetadataPath: metadataPath(6) })!;
    expect(Object.keys(after.refs).sort()).toEqual(['latest', 'main', 'wap']);
    expect(after['metadata-log'].at(-1)!['metadata-file']).toBe(metadataPath(6));
    expect(after.snapshots).toEqual(before.snapshots);
    expect([...retainedSnapshotIds(after, 1)].sort()).toEqual([1005, 2001]);
    expect(checkTableMetadata(JSON.parse(JSON.stringify(after)))).toEqual([]);
    // Nothing to drop: no new version.
    expect(dropRefsOffCurrent(after, { nowMs: T0, previousMetadataPath: metadataPath(7) })).toBeUndefined();
    expect(dropRefsOffCurrent(appended(5), { nowMs: T0, previousMetadataPath: metadataPath(7) })).toBeUndefined();
  });
});

describe('expireSnapshots', () => {
  it('keeps the newest N, the current one and every ref, and trims the snapshot-log to the entries after the last expired one', () => {
    const before = appended(10);
    const tagged = { ...before, refs: { ...before.refs, audit2025: { 'snapshot-id': 1002, type: 'tag' as const } } };
    expect([...retainedSnapshotIds(tagged, 3)].sort()).toEqual([1002, 1008, 1009, 1010]);
    const after = expireSnapshots(tagged, { retainLast: 3, nowMs: T0, previousMetadataPath: metadataPath(11) })!;
    expect(after.snapshots.map((s) => s['snapshot-id'])).toEqual([1002, 1008, 1009, 1010]);
    // 1002 stays (its tag), but not in the log: 1003–1007 were current after it.
    expect(after['snapshot-log'].map((e) => e['snapshot-id'])).toEqual([1008, 1009, 1010]);
    expect(after['current-snapshot-id']).toBe(1010);
    expect(after['last-sequence-number']).toBe(before['last-sequence-number']);
    expect(after['metadata-log'].at(-1)!['metadata-file']).toBe(metadataPath(11));
    expect(after['last-updated-ms']).toBeGreaterThan(before['last-updated-ms']);
    expect(checkTableMetadata(JSON.parse(JSON.stringify(after)))).toEqual([]);
  });

  it('keeps, when the current snapshot has no watermark (another engine on top), every ancestor back to the newest one that has it', () => {
    let metadata = appended(5);
    for (const id of [3001, 3002]) {
      metadata = appendSnapshot(metadata, { snapshotId: id, manifestListPath: listPath(id), nowMs: T0 + id, addedFiles: { records: 1, files: 1, sizeBytes: 10, partitions: 1 }, previousMetadataPath: metadataPath(id), summaryExtra: { 'spark.app.id': 'x' } });
    }
    expect(snapshotAncestry(metadata).map((s) => s['snapshot-id'])).toEqual([3002, 3001, 1005, 1004, 1003, 1002, 1001]);
    expect([...retainedSnapshotIds(metadata, 1)].sort()).toEqual([1005, 3001, 3002]);
    const after = expireSnapshots(metadata, { retainLast: 1, nowMs: T0, previousMetadataPath: metadataPath(3003) })!;
    expect(after.snapshots.map((s) => s['snapshot-id'])).toEqual([1005, 3001, 3002]);
    expect(readWatermarkFromMetadata(after)).toMatchObject({ snapshotId: 1005, seq: 50n });
    // A watermark on the current snapshot needs nothing more; nor does a table none carries.
    expect([...retainedSnapshotIds(appended(5), 1)]).toEqual([1005]);
    const gone = { ...metadata, snapshots: metadata.snapshots.filter((s) => s['snapshot-id'] > 3000) };
    expect(snapshotAncestry(gone).map((s) => s['snapshot-id'])).toEqual([3002, 3001]);
    expect([...retainedSnapshotIds(gone, 1)]).toEqual([3002]);
  });

  it('keeps, given keepRemovedSinceMs, every snapshot since then that took data files out and its parent, and no other', () => {
    const compacted = replaceSnapshot(appended(5), {
      snapshotId: 2000,
      manifestListPath: listPath(2000),
      nowMs: T0 + 100,
      previousMetadataPath: metadataPath(6),
      addedFiles: { records: 50, files: 1, sizeBytes: 4000, partitions: 1 },
      deletedFiles: { records: 50, files: 5, sizeBytes: 5000 },
      summaryExtra: watermarkSummary({ seq: 50n, writerId: 'w', leaderTerm: 1 }),
    });
    const rewritten = replaceSnapshot(compacted, {
      snapshotId: 2001,
      manifestListPath: listPath(2001),
      nowMs: T0 + 200,
      previousMetadataPath: metadataPath(7),
      addedFiles: { records: 0, files: 0, sizeBytes: 0, partitions: 0 },
      deletedFiles: { records: 0, files: 0, sizeBytes: 0 },
      manifests: { created: 1, replaced: 2, kept: 0, entriesProcessed: 1 },
      summaryExtra: watermarkSummary({ seq: 50n, writerId: 'w', leaderTerm: 1 }),
    });
    // The compaction (T0 + 100) is within the grace: the snapshot before it, which names the files it
    // replaced, stays, and so does the compaction, the record of when they were replaced.
    expect([...retainedSnapshotIds(rewritten, 1, T0 + 100)].sort()).toEqual([1005, 2000, 2001]);
    // The manifest rewrite removed no data file: its parent, the compaction, is not kept for it.
    expect([...retainedSnapshotIds(rewritten, 1, T0 + 101)].sort()).toEqual([2001]);
    expect(expireSnapshots(rewritten, { retainLast: 1, nowMs: T0 + 300, previousMetadataPath: metadataPath(8), keepRemovedSinceMs: T0 + 100 })!.snapshots.map((s) => s['snapshot-id'])).toEqual([1005, 2000, 2001]);
  });

  it('leaves no gap in the snapshot-log: a read as of a time whose snapshot expired finds none, not a kept older one (a young compaction\'s parent)', () => {
    const parent = appended(1);
    let metadata = replaceSnapshot(parent, {
      snapshotId: 2000,
      manifestListPath: listPath(2000),
      nowMs: T0 + 20_000,
      previousMetadataPath: metadataPath(2),
      addedFiles: { records: 10, files: 1, sizeBytes: 900, partitions: 1 },
      deletedFiles: { records: 10, files: 1, sizeBytes: 1000 },
      summaryExtra: watermarkSummary({ seq: 10n, writerId: 'w', leaderTerm: 1 }),
    });
    for (let i = 1; i <= 5; i++) metadata = appendOne(metadata, 3000 + i, T0 + 20_000 + i * 10_000);
    const after = expireSnapshots(metadata, { retainLast: 2, nowMs: T0 + 100_000, previousMetadataPath: metadataPath(9), keepRemovedSinceMs: T0 + 100_000 - 15 * 60_000 })!;
    // The compaction and its parent are kept for its grace; the first appends after it go.
    expect(after.snapshots.map((s) => s['snapshot-id'])).toEqual([1001, 2000, 3004, 3005]);
    expect(after['snapshot-log'].map((e) => e['snapshot-id'])).toEqual([3004, 3005]);
    // Time travel takes the newest log entry at or before the time (Java's SnapshotUtil): as of
    // when 3002 was current, the kept parent (10 rows of the 12) would have been read.
    const asOf = (ms: number) => after['snapshot-log'].filter((e) => e['timestamp-ms'] <= ms).at(-1)?.['snapshot-id'];
    expect(asOf(T0 + 45_000)).toBeUndefined();
    expect(asOf(T0 + 65_000)).toBe(3004);
    expect(checkTableMetadata(JSON.parse(JSON.stringify(after)))).toEqual([]);
  });

  it('ages snapshots by when they were made: a stamp later than its clock records the clock beside it, and one made after now (beyond the skew allowed) is not young', () => {
    const YEAR_MS = 365 * 86_400_000;
    // A commit stamped by a clock a year ahead, then two by a right one: stamped after it all the same.
    const ahead = appendOne(appended(2), 2001, T0 + YEAR_MS);
    const after = appendOne(appendOne(ahead, 2002, T0 + 50_000), 2003, T0 + 60_000);
    const [first, second, third] = after.snapshots.slice(-3) as [IcebergSnapshot, IcebergSnapshot, IcebergSnapshot];
    expect([first['timestamp-ms'], second['timestamp-ms'], third['timestamp-ms']]).toEqual([T0 + YEAR_MS, T0 + YEAR_MS + 1, T0 + YEAR_MS + 2]);
    // Recorded only where the stamp is not the clock's.
    expect(first.summary[COMMITTED_AT_SUMMARY_KEY]).toBeUndefined();
    expect(second.summary[COMMITTED_AT_SUMMARY_KEY]).toBe(String(T0 + 50_000));
    expect([first, second, third].map(snapshotMadeAtMs)).toEqual([T0 + YEAR_MS, T0 + 50_000, T0 + 60_000]);
    expect(snapshotMadeAtMs({ ...third, summary: { ...third.summary, [COMMITTED_AT_SUMMARY_KEY]: 'soon' } })).toBe(T0 + YEAR_MS + 2);
    // At T0 + 90 s with a minute's grace: the two made since are young, and so is the one stamped a
    // year ahead, made no later than its successor; the older ones are not.
    const now = T0 + 90_000;
    expect([...retainedSnapshotIds(after, 1, undefined, now - 60_000, now)].sort()).toEqual([2001, 2002, 2003]);
    // Made after now by as much as nodes' clocks may differ (its writer's ahead, the expiring node's stepped back): still young.
    expect([...retainedSnapshotIds(appendOne(after, 2004, now + NODE_CLOCK_SKEW_MAX_MS), 1, undefined, now - 60_000, now)].sort()).toEqual([2001, 2002, 2003, 2004]);
    // Made further after now, with nothing made earlier after it: no age known, old (the newest is kept as the current one).
    const beyond = appendOne(appendOne(after, 2004, now + NODE_CLOCK_SKEW_MAX_MS + 1), 2005, now + NODE_CLOCK_SKEW_MAX_MS + 2);
    expect([...retainedSnapshotIds(beyond, 1, undefined, now - 60_000, now)].sort()).toEqual([2001, 2002, 2003, 2005]);
    // A stamp carrying an earlier commit's lead (half an hour) is allowed only a minute: the time
    // its writer recorded counts, or every snapshot of that half hour would be young.
    const lead = appendOne(appendOne(appendOne(appended(2), 2101, now + 30 * 60_000), 2102, now - 120_000), 2103, now);
    expect((lead.snapshots.at(-2) as IcebergSnapshot)['timestamp-ms']).toBe(now + 30 * 60_000 + 1);
    expect([...retainedSnapshotIds(lead, 1, undefined, now - 60_000, now)].sort()).toEqual([2101, 2103]);
    const nearStamp = now + 30 * 60_000 + 1 - SNAPSHOT_CLOCK_AHEAD_TOLERANCE_MS;
    expect([...retainedSnapshotIds(lead, 1, undefined, nearStamp - 60_000, nearStamp)].sort()).toEqual([2101, 2102, 2103]);
    // Without a clock, nothing counts as made too late.
    expect([...retainedSnapshotIds(beyond, 1, undefined, now - 60_000)].sort()).toEqual([2001, 2002, 2003, 2004, 2005]);
  });

  it('ages a snapshot made by a clock ahead of the expiring node\'s by its successors: a compaction made minutes ahead keeps its parent for the grace (second review)', () => {
    // Leader A, its clock two minutes ahead, compacts at real time +300 s (stamped +420 s).
    const compacted = replaceSnapshot(appended(2), {
      snapshotId: 2000,
      manifestListPath: listPath(2000),
      nowMs: T0 + 420_000,
      previousMetadataPath: metadataPath(3),
      addedFiles: { records: 20, files: 1, sizeBytes: 2000, partitions: 1 },
      deletedFiles: { records: 20, files: 2, sizeBytes: 2000 },
      summaryExtra: watermarkSummary({ seq: 20n, writerId: 'w', leaderTerm: 2 }),
    });
    // Leader B, its clock right, appends at +320 s and +325 s: stamped after A's, its clock recorded.
    const after = appendOne(appendOne(compacted, 3001, T0 + 320_000), 3002, T0 + 325_000);
    const now = T0 + 330_000;
    // B expires with the sweep's graces (15 min for a compaction's parent, 1 min for any snapshot):
    // the compaction was made no later than its successor (+320 s), so it and its parent stay.
    expect([...retainedSnapshotIds(after, 2, now - 15 * 60_000, now - 60_000, now)].sort()).toEqual([1002, 2000, 3001, 3002]);
    // A successor from a clock twenty minutes behind (a third review) makes nothing older: the compaction is young by its own time.
    const behind = appendOne(compacted, 3001, T0 + 420_000 - 20 * 60_000);
    expect(snapshotMadeAtMs(behind.snapshots.at(-1) as IcebergSnapshot)).toBe(T0 + 420_000 - 20 * 60_000);
    expect([...retainedSnapshotIds(behind, 1, T0 + 450_000 - 15 * 60_000, T0 + 450_000 - 60_000, T0 + 450_000)].sort()).toEqual([1002, 2000, 3001]);
    // Nor does one from a clock reset to 1970.
    const reset = appendOne(compacted, 3001, 0);
    expect([...retainedSnapshotIds(reset, 1, T0 + 450_000 - 15 * 60_000, T0 + 450_000 - 60_000, T0 + 450_000)].sort()).toEqual([1002, 2000, 3001]);
    // Once the grace is over, they may go.
    expect([...retainedSnapshotIds(after, 2, now + 20 * 60_000 - 15 * 60_000, now + 20 * 60_000 - 60_000, now + 20 * 60_000)].sort()).toEqual([3001, 3002]);
  });

  it('ages a compaction made by a clock behind the other writers\' by its timestamp-ms too: its parent stays for the grace (review)', () => {
    // B, its clock right, appends at +600 s; A, its clock 20 minutes behind, compacts at +610 s:
    // stamped after the table's last update (+600 s), its own clock recorded 20 minutes back.
    const appendedByB = appendOne(appended(2), 3001, T0 + 600_000);
    const compacted = replaceSnapshot(appendedByB, {
      snapshotId: 4000,
      manifestListPath: listPath(4000),
      nowMs: T0 + 610_000 - 20 * 60_000,
      previousMetadataPath: metadataPath(4),
      addedFiles: { records: 21, files: 1, sizeBytes: 2000, partitions: 1 },
      deletedFiles: { records: 21, files: 3, sizeBytes: 2000 },
      summaryExtra: watermarkSummary({ seq: 21n, writerId: 'w', leaderTerm: 2 }),
    });
    const made = compacted.snapshots.at(-1) as IcebergSnapshot;
    expect({ stamped: made['timestamp-ms'], recorded: snapshotMadeAtMs(made) }).toEqual({ stamped: T0 + 600_001, recorded: T0 + 610_000 - 20 * 60_000 });
    // Five minutes on: B's append is past the read grace, the compaction within its 15 minutes.
    const now = T0 + 900_000;
    expect([...retainedSnapshotIds(compacted, 1, now - 15 * 60_000, now - 60_000, now)].sort()).toEqual([3001, 4000]);
    // Once the grace is over by its stamp too, the parent may go.
    const later = now + 15 * 60_000;
    expect([...retainedSnapshotIds(compacted, 1, later - 15 * 60_000, later - 60_000, later)]).toEqual([4000]);
  });

  it('ages a compaction made ahead of the expiring node\'s clock, by less than nodes\' clocks may differ, as young: a failover to a node 20 minutes behind, or its own clock stepped back 5 minutes, keeps its parent for the grace (review)', () => {
    // Goal: a snapshot dated ahead of the expiring node's clock (within NODE_CLOCK_SKEW_MAX_MS) counts as young, not ageless.
    const compacted = compactedAt(appended(2), T0 + 600_000);
    for (const behindMs of [5 * 60_000, 20 * 60_000, NODE_CLOCK_SKEW_MAX_MS - 15 * 60_000]) {
      const now = T0 + 602_000 - behindMs;
      expect([...retainedSnapshotIds(compacted, 1, now - 15 * 60_000, undefined, now)].sort(), `${behindMs} ms behind`).toEqual([1002, 2000]);
    }
    // Further ahead than clocks may differ, its time tells no age: old, kept only as the current one.
    const now = T0 + 600_000 - NODE_CLOCK_SKEW_MAX_MS - 1;
    expect([...retainedSnapshotIds(compacted, 1, now - 15 * 60_000, undefined, now)]).toEqual([2000]);
  });

  it('keeps, given seenForMs, a compaction the expiring process has seen for less than the grace, and its parent, however old the clocks make it, until its time is the skew past the grace (review)', () => {
    // Goal: how long the expiring process has seen a snapshot (a clock no node's step or skew moves) is a lower bound of its age.
    const compacted = compactedAt(appended(2), T0);
    const kept = (now: number, seenForMs?: ReadonlyMap<number, number>) => [...retainedSnapshotIds(compacted, 1, now - 15 * 60_000, undefined, now, seenForMs)].sort();
    // A failover to a node 20 minutes ahead (or this node's clock stepped forward 20 minutes), seconds after the compaction.
    const now = T0 + 20 * 60_000 + 2_000;
    expect(kept(now)).toEqual([2000]);
    expect(kept(now, new Map([[2000, 2_000]]))).toEqual([1002, 2000]);
    // Seen for the grace: it may go; so may one the map does not name (the parent seen anew keeps nothing).
    expect(kept(now, new Map([[2000, 15 * 60_000]]))).toEqual([2000]);
    expect(kept(now, new Map([[1002, 2_000]]))).toEqual([2000]);
    // A process restarted between every expiry sees it anew each time: the skew past the grace, it goes all the same.
    expect(kept(T0 + 15 * 60_000 + NODE_CLOCK_SKEW_MAX_MS, new Map([[2000, 0]]))).toEqual([1002, 2000]);
    expect(kept(T0 + 15 * 60_000 + NODE_CLOCK_SKEW_MAX_MS + 1_000, new Map([[2000, 0]]))).toEqual([2000]);
    // An erasure's expiry keeps no grace: nothing seen keeps anything.
    expect([...retainedSnapshotIds(compacted, 1, undefined, undefined, now, new Map([[2000, 0], [1002, 0]]))]).toEqual([2000]);
  });

  it("drops the statistics and partition-statistics entries of expired snapshots, and keeps the retained ones", () => {
    const before = appended(4);
    const entries = (field: string) => [1001, 1004].map((id) => ({ 'snapshot-id': id, 'statistics-path': `${LOCATION}/metadata/${field}-${id}.puffin`, 'file-size-in-bytes': 10 }));
    const withStats = { ...before, statistics: entries('stats'), 'partition-statistics': entries('partition-stats') } as IcebergTableMetadata;
    const after = expireSnapshots(withStats, { retainLast: 2, nowMs: T0, previousMetadataPath: metadataPath(5) })! as Record<string, unknown>;
    expect((after['statistics'] as Array<{ 'snapshot-id': number }>).map((e) => e['snapshot-id'])).toEqual([1004]);
    expect((after['partition-statistics'] as Array<{ 'snapshot-id': number }>).map((e) => e['snapshot-id'])).toEqual([1004]);
  });

  it('answers undefined when nothing would expire, and refuses retainLast < 1', () => {
    expect(expireSnapshots(appended(3), { retainLast: 3, nowMs: T0, previousMetadataPath: metadataPath(4) })).toBeUndefined();
    expect(() => retainedSnapshotIds(appended(3), 0)).toThrow(TypeError);
  });
});

describe('trimMetadataLog', () => {
  it('cuts the metadata-log to its limit, and answers undefined when it is within', () => {
    const before = appended(10);
    expect(before['metadata-log']).toHaveLength(10);
    const after = trimMetadataLog(before, { entriesMax: 4, nowMs: T0, previousMetadataPath: metadataPath(11) })!;
    expect(after['metadata-log'].map((e) => e['metadata-file'])).toEqual([metadataPath(8), metadataPath(9), metadataPath(10), metadataPath(11)]);
    expect(after.snapshots).toEqual(before.snapshots);
    expect(trimMetadataLog(before, { entriesMax: 11, nowMs: T0, previousMetadataPath: metadataPath(11) })).toBeUndefined();
  });
});
