/**
 * Test support for the packages that test against object storage and Iceberg tables (lake,
 * tiering, the CLI): the embedded S3 endpoint per test file (it registers vitest hooks), icebird's
 * requests routed to it, and what
 * another engine does to a table, built from the same metadata operations our writer uses.
 * Exported as `@auditlake/lake/testing`; nothing in a node imports it, only tests do (vitest and
 * `@auditlake/s3-endpoint` are optional peers of this package for that reason).
 */
import { currentSnapshot, replaceSnapshot } from '@auditlake/format';
import type { IcebergTableRef } from '../iceberg-table-ref.js';
import type { LoadedTable } from '../iceberg-table.js';
import { commitMetadataVersion, type CommitFence } from '../iceberg-version-commit.js';
import type { ObjectStore } from '../object-store.js';

export { routeAwsS3To } from './aws-s3-route.js';
export { expectNoneLeftToMerge } from './compaction-left.js';
export { countObjectGets } from './object-gets.js';
export { useEmbeddedS3, type EmbeddedS3 } from './embedded-s3.js';
export { twoDayEvents } from './two-day-events.js';
export { vanishingOnRead } from './vanishing-objects.js';

const ANY_TIME: Omit<CommitFence, 'serialize'> = { term: 1, mayCommit: () => true };

/**
 * Commits, on top of `loaded`, another engine's snapshot without data change (as a Spark
 * `rewrite_manifests` that changed nothing): the current manifest list again, `spark.app.id`
 * in its summary and none of auditlake's keys. Returns the table as committed.
 */
export async function commitForeignSnapshotOnTop(objects: ObjectStore, table: IcebergTableRef, loaded: LoadedTable, snapshotId: number, fence: Omit<CommitFence, 'serialize'> = ANY_TIME): Promise<LoadedTable> {
  const parent = currentSnapshot(loaded.metadata);
  if (parent === undefined) throw new Error('the table has no snapshot to commit on top of');
  const next = replaceSnapshot(loaded.metadata, {
    snapshotId,
    manifestListPath: parent['manifest-list'],
    nowMs: Date.now(),
    previousMetadataPath: loaded.metadataPath,
    addedFiles: { records: 0, files: 0, sizeBytes: 0, partitions: 0 },
    deletedFiles: { records: 0, files: 0, sizeBytes: 0 },
    summaryExtra: { 'spark.app.id': 'other-engine' },
  });
  return commitMetadataVersion(objects, table, loaded, next, fence);
}
export { duckdbOverObjects } from './duckdb-objects.js';
