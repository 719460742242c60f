// Goal: the files compaction writes (Iceberg and Parquet mode) carry a row-group sketch in their footer, and reading only the row groups it admits returns exactly what a full scan of every event returns, for user, engine, table, decision, action kind and q filters.
import { AuditParquetFile, rowGroupSketches, sketchProbe, type TieredEvent } from '@auditlake/format';
import { compileFilter, newestFirst, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { useEmbeddedS3 } from '../src/testing/index.js';
import {
  commitIcebergBatch,
  commitParquetBatch,
  ensureIcebergTable,
  IcebergTierSource,
  loadIcebergTable,
  ParquetTierSource,
  resolveIcebergTable,
  runIcebergMaintenance,
  runParquetMaintenance,
  type TierSource,
} from '../src/index.js';

const BUCKET = 'sketch';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const CREDENTIALS = { accessKeyId: 'ALSKETCHCOMPACTION01', secretAccessKey: 'sketch-compaction-secret-0123456789ab' };
const s3 = useEmbeddedS3('sketch-compaction-', BUCKET, CREDENTIALS);

const USERS = ['alice', 'Bob', 'İlkay', 'svc-etl', 'rare-user'];
const TABLES = ['hive.sales.orders', 'ice.ops.監査', 'Hive.Sales.Secret'];

/** Events firstSeq.. over two days; seq decides every field, so the expectation is plain to read. */
function events(firstSeq: number, count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    const rare = seq % 97 === 0;
    return {
      eventId: `e${seq}`,
      userId: rare ? 'rare-user' : (USERS[seq % 4] as string),
      source: seq % 5 === 0 ? 'Spark' : 'trino',
      action: seq % 3 === 0 ? 'data:Write' : 'data:Select',
      resource: '',
      decision: seq % 11 === 0 ? 'DENY' : 'ALLOW',
      tables: rare ? ['rare.table'] : [TABLES[seq % 3] as string],
      query: rare ? `SELECT Straße FROM rare.table -- ${seq}` : `select * from t where id = ${seq}`,
      details: seq % 7 === 0 ? 'ΟΔΟΣ 監査ログ' : '',
      timestamp: T0 + (seq % 2) * DAY_MS + seq * 1000,
      ingestTs: T0 + 10 * DAY_MS + seq,
      seq,
      term: 1,
    };
  });
}

const FILTERS: SearchFilter[] = [
  { action: 'all', limit: 1, user: 'rare-user' },
  { action: 'all', limit: 1, user: 'nobody' },
  { action: 'all', limit: 1, engine: 'spark' },
  { action: 'all', limit: 1, table: 'rare.tab' },
  { action: 'all', limit: 1, table: 'Sales.S' },
  { action: 'all', limit: 1, decision: 'DENY' },
  { action: 'all', limit: 1, decision: '' },
  { action: 'write', limit: 1 },
  { action: 'all', limit: 1, q: 'straße' },
  { action: 'all', limit: 1, q: 'οδος' },
  { action: 'all', limit: 1, q: '監査' },
  { action: 'all', limit: 1, q: 'no-such-text' },
  { action: 'all', limit: 1, q: 'id = 19' },
];

/** Reads the tier's files through their sketches: events of the admitted groups only, filtered exactly, and the groups skipped. */
async function prunedRead(tier: TierSource, filter: SearchFilter): Promise<{ ids: string[]; skipped: number; groups: number }> {
  const matches = compileFilter(filter);
  const probe = sketchProbe(filter);
  const found: TieredEvent[] = [];
  let skipped = 0;
  let groups = 0;
  for (const file of await tier.listFiles()) {
    const parquet = await AuditParquetFile.open(await tier.open(file));
    const sketches = rowGroupSketches(parquet.footer);
    expect(sketches.every((s) => s !== undefined), file.key).toBe(true);
    for (const group of parquet.rowGroups) {
      groups++;
      if (probe !== undefined && !sketches[group.index]!.mayMatch(probe)) {
        skipped++;
        continue;
      }
      found.push(...(await parquet.read({ rowGroups: [group.index] })).filter((e) => matches(e)));
    }
  }
  return { ids: found.sort(newestFirst).map((e) => e.eventId), skipped, groups };
}

function fullScan(all: readonly StoredEvent[], filter: SearchFilter): string[] {
  const matches = compileFilter(filter);
  return all.filter((e) => matches(e)).sort(newestFirst).map((e) => e.eventId);
}

async function expectPrunedEqualsFullScan(tier: TierSource, all: readonly StoredEvent[]): Promise<void> {
  let skipped = 0;
  for (const filter of FILTERS) {
    const read = await prunedRead(tier, filter);
    expect(read.ids, JSON.stringify(filter)).toEqual(fullScan(all, filter));
    skipped += read.skipped;
  }
  expect(skipped).toBeGreaterThan(0);
}

const fence = { term: 1, mayCommit: () => true };
const PER_COMMIT = 150;
const COMMITS = 6;

describe('row-group sketches after compaction', () => {
  it('Iceberg: compacted files carry sketches; reading only the groups they admit equals a full scan', async () => {
    const table = resolveIcebergTable('cat.ops.sketched', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    let loaded = await ensureIcebergTable(objects, table, T0);
    for (let c = 0; c < COMMITS; c++) {
      await commitIcebergBatch(objects, table, loaded, events(1 + c * PER_COMMIT, PER_COMMIT), { ...fence, nowMs: Date.now(), writerId: 'test' });
      loaded = (await loadIcebergTable(objects, table))!;
    }
    const all = events(1, COMMITS * PER_COMMIT);
    const source = new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    try {
      await expectPrunedEqualsFullScan(source, all);
      const figures = await runIcebergMaintenance(
        { objects, table, fence, now: Date.now },
        { snapshotRetainLast: 3, removeOrphanFiles: false, orphanMinAgeMs: DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 5 },
      );
      expect(figures.filesAdded).toBe(2);
      expect(await source.listFiles()).toHaveLength(2);
      await expectPrunedEqualsFullScan(source, all);
    } finally {
      await source.close();
    }
  }, 120_000);

  it('Parquet: compacted files carry sketches; reading only the groups they admit equals a full scan', async () => {
    const location = { bucket: BUCKET, prefix: 'pq' };
    const objects = s3.connections.bucket('s3', BUCKET);
    for (let c = 0; c < COMMITS; c++) {
      await commitParquetBatch(objects, location, events(1 + c * PER_COMMIT, PER_COMMIT), { term: 1, nowMs: T0, afterSeq: c * PER_COMMIT, mayCommit: () => true });
    }
    const all = events(1, COMMITS * PER_COMMIT);
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/pq`, connectionId: 's3' });
    try {
      await expectPrunedEqualsFullScan(source, all);
      const run = await runParquetMaintenance({ objects, location, fence, now: Date.now }, { removeOrphanFiles: false, orphanMinAgeMs: 0, targetFileSizeBytes: 16 * 1024 * 1024 });
      expect(run.filesAdded).toBe(2);
      expect(await source.listFiles()).toHaveLength(2);
      await expectPrunedEqualsFullScan(source, all);
    } finally {
      await source.close();
    }
  }, 120_000);
});
