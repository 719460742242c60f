import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { DataFile } from './iceberg-manifest.js';
import { WATERMARK_SUMMARY_KEY } from './iceberg-watermark.js';
import {
  AUDIT_LAST_COLUMN_ID,
  AUDIT_PARTITION_SPEC_ID,
  AUDIT_SCHEMA_ID,
  AUDIT_SORT_ORDER_ID,
  auditIcebergSchema,
  auditNameMapping,
  auditPartitionSpec,
  auditSortOrder,
  EVENT_TIME_DAY_FIELD_ID,
  type IcebergPartitionSpec,
  type IcebergSchema,
  type IcebergSortOrder,
} from './iceberg-schema.js';

/** A snapshot of the table (spec "Snapshots"; docs/iceberg-layout.md §2). */
export interface IcebergSnapshot {
  'snapshot-id': number;
  /** Absent for the table's first snapshot (never -1 or null). */
  'parent-snapshot-id'?: number;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  /** String → string; `operation` is required. */
  summary: Record<string, string>;
  'schema-id'?: number;
}

/** A named reference to a snapshot; `main` is the table's current state. */
export interface IcebergSnapshotRef {
  'snapshot-id': number;
  type: 'branch' | 'tag';
  [retention: string]: unknown;
}

export interface IcebergSnapshotLogEntry {
  'timestamp-ms': number;
  'snapshot-id': number;
}

export interface IcebergMetadataLogEntry {
  'timestamp-ms': number;
  'metadata-file': string;
}

/**
 * Format v2 table metadata (spec "Table Metadata Fields"; docs/iceberg-layout.md §1), as written to
 * `metadata/vN.metadata.json`. Fields other engines add (`statistics`, …) are carried through
 * unchanged by {@link appendSnapshot}.
 */
export interface IcebergTableMetadata {
  'format-version': 2;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  'current-schema-id': number;
  schemas: IcebergSchema[];
  'default-spec-id': number;
  'partition-specs': IcebergPartitionSpec[];
  'last-partition-id': number;
  'default-sort-order-id': number;
  'sort-orders': IcebergSortOrder[];
  properties: Record<string, string>;
  /** -1 before the first snapshot (Java's v2 form; readers treat it as none). */
  'current-snapshot-id': number;
  refs: Record<string, IcebergSnapshotRef>;
  snapshots: IcebergSnapshot[];
  'snapshot-log': IcebergSnapshotLogEntry[];
  'metadata-log': IcebergMetadataLogEntry[];
  [other: string]: unknown;
}

/** `current-snapshot-id` of a table without snapshots. */
export const NO_CURRENT_SNAPSHOT_ID = -1;

/** Java's default `write.metadata.previous-versions-max`: metadata-log entries kept. */
export const METADATA_LOG_ENTRIES_MAX_DEFAULT = 100;

/** Table properties written at creation unless the caller overrides them. */
export function defaultTableProperties(): Record<string, string> {
  return {
    'write.format.default': 'parquet',
    'write.parquet.compression-codec': 'gzip',
    'schema.name-mapping.default': auditNameMapping(),
  };
}

/** What {@link newTableMetadata} needs. */
export interface NewTableMetadataOptions {
  /** Absolute table URI without a trailing slash, e.g. `s3://bucket/warehouse/audit/events`. */
  location: string;
  /** Generated once at creation (a UUID); never changes afterwards. */
  tableUuid: string;
  /** Creation time, epoch ms (`last-updated-ms`). */
  nowMs: number;
  /** Extra or overriding table properties; values are strings (Java rejects others). */
  properties?: Readonly<Record<string, string>>;
}

/**
 * The metadata of a new, empty table (`v1.metadata.json`): format 2, the audit schema (id 0,
 * `last-column-id` 12), the spec `day(event_time)` (id 0, `last-partition-id` 1000), the
 * unsorted order 0, no snapshots (`current-snapshot-id` -1, empty refs and logs),
 * `last-sequence-number` 0 and {@link defaultTableProperties} merged with `properties`.
 * Throws TypeError for a location that is not an absolute URI without trailing slash, a bad
 * UUID, time or property value.
 */
export function newTableMetadata(options: NewTableMetadataOptions): IcebergTableMetadata {
  checkLocation(options.location);
  if (!UUID_PATTERN.test(options.tableUuid)) throw new TypeError(`tableUuid must be a UUID, got ${options.tableUuid}`);
  checkMs('nowMs', options.nowMs);
  const properties = { ...defaultTableProperties(), ...options.properties };
  checkStringMap('properties', properties);
  const metadata: IcebergTableMetadata = {
    'format-version': 2,
    'table-uuid': options.tableUuid.toLowerCase(),
    location: options.location,
    'last-sequence-number': 0,
    'last-updated-ms': options.nowMs,
    'last-column-id': AUDIT_LAST_COLUMN_ID,
    'current-schema-id': AUDIT_SCHEMA_ID,
    schemas: [auditIcebergSchema()],
    'default-spec-id': AUDIT_PARTITION_SPEC_ID,
    'partition-specs': [auditPartitionSpec()],
    'last-partition-id': EVENT_TIME_DAY_FIELD_ID,
    'default-sort-order-id': AUDIT_SORT_ORDER_ID,
    'sort-orders': [auditSortOrder()],
    properties,
    'current-snapshot-id': NO_CURRENT_SNAPSHOT_ID,
    refs: {},
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
  };
  assertValid(checkTableMetadata(metadata));
  return metadata;
}

/** Counters of the files a snapshot adds (summary `added-*` and `changed-partition-count`). */
export interface AddedFilesSummary {
  records: number;
  files: number;
  sizeBytes: number;
  /** Distinct partitions (days) the added files belong to. */
  partitions: number;
}

/** The {@link AddedFilesSummary} of the data files a snapshot adds. */
export function summarizeAddedFiles(files: readonly DataFile[]): AddedFilesSummary {
  const days = new Set(files.map((file) => file.partition.event_time_day));
  return {
    records: files.reduce((sum, file) => sum + file.record_count, 0),
    files: files.length,
    sizeBytes: files.reduce((sum, file) => sum + file.file_size_in_bytes, 0),
    partitions: days.size,
  };
}

/** What every new snapshot needs, whatever its operation. */
export interface SnapshotCommonOptions {
  /** New snapshot id: a positive safe integer not used before in the table. */
  snapshotId: number;
  /** Absolute path of the snapshot's manifest list (already written). */
  manifestListPath: string;
  /** Commit time, epoch ms; raised to previous `last-updated-ms` + 1 if the clock is behind. */
  nowMs: number;
  /**
   * Absolute path of the metadata file `metadata` was read from (`vN.metadata.json`); it
   * becomes the newest `metadata-log` entry of the new version.
   */
  previousMetadataPath: string;
  /** Extra summary keys, e.g. the tiering watermark ({@link watermarkSummary}). */
  summaryExtra?: Readonly<Record<string, string>>;
  /** metadata-log entries kept (oldest dropped first); default {@link METADATA_LOG_ENTRIES_MAX_DEFAULT}. */
  metadataLogEntriesMax?: number;
}

/** What {@link appendSnapshot} adds. */
export interface AppendSnapshotOptions extends SnapshotCommonOptions {
  addedFiles: AddedFilesSummary;
}

/** What a `replace` snapshot changes: files rewritten (compaction) or manifests rewritten. */
export interface ReplaceSnapshotOptions extends SnapshotCommonOptions {
  /** Data files the snapshot adds (the rewritten files); zero counts for a manifest rewrite. */
  addedFiles: AddedFilesSummary;
  /** Data files it removes; `records` must equal `addedFiles.records` (same rows, other files). */
  deletedFiles: Omit<AddedFilesSummary, 'partitions'>;
  /** For a manifest rewrite: `manifests-created`, `-replaced`, `-kept`, `entries-processed`. */
  manifests?: { created: number; replaced: number; kept: number; entriesProcessed: number };
  /**
   * `replace` (default: the same values in other files) or `overwrite` (a row-level rewrite
   * that changes values but keeps every row, e.g. an erasure).
   */
  operation?: 'replace' | 'overwrite';
}

/** Summary keys the snapshot builders compute; `summaryExtra` may not set them. */
const STANDARD_SUMMARY_KEYS = new Set([
  'operation',
  'added-data-files',
  'added-records',
  'added-files-size',
  'deleted-data-files',
  'deleted-records',
  'removed-files-size',
  'changed-partition-count',
  'manifests-created',
  'manifests-replaced',
  'manifests-kept',
  'entries-processed',
  'total-records',
  'total-files-size',
  'total-data-files',
  'total-delete-files',
  'total-position-deletes',
  'total-equality-deletes',
]);

/**
 * The next table metadata after an `append` commit (docs/iceberg-layout.md §2 and §6), leaving
 * `metadata` untouched: a snapshot with sequence number `last-sequence-number` + 1, the current
 * snapshot as parent (omitted for the first), the manifest list, schema id and a summary with
 * `operation` = append, the `added-*` counters, `changed-partition-count`, the cumulative
 * `total-*` counters (a total the parent lacks — a foreign writer may omit them — is left out
 * rather than guessed, as Java does) and `summaryExtra`. It becomes `current-snapshot-id` and
 * `refs.main`, gets a `snapshot-log` entry, and `previousMetadataPath` a `metadata-log` entry
 * stamped with the previous `last-updated-ms`. Timestamps never go backwards: the commit time
 * is `max(nowMs, previous last-updated-ms + 1)`.
 *
 * Throws TypeError for a reused or invalid snapshot id, bad counts, paths or summary values, or
 * `summaryExtra` that sets a standard key; AuditError AUDIT_TIER_TARGET_UNUSABLE when
 * `metadata` itself is not valid v2 metadata.
 */
export function appendSnapshot(metadata: IcebergTableMetadata, options: AppendSnapshotOptions): IcebergTableMetadata {
  const added = options.addedFiles;
  checkCounts('addedFiles', added);
  return addSnapshot(metadata, options, 'append', {
    summary: {
      'added-data-files': String(added.files),
      'added-records': String(added.records),
      'added-files-size': String(added.sizeBytes),
      'changed-partition-count': String(added.partitions),
    },
    totalDeltas: { 'total-records': added.records, 'total-files-size': added.sizeBytes, 'total-data-files': added.files },
  });
}

/**
 * The next table metadata after a `replace` commit (docs/iceberg-layout.md "Maintenance"): the
 * same rows in other files (compaction: `added-*`, `deleted-*`, `removed-files-size`,
 * `changed-partition-count`) or the same files in other manifests (manifest rewrite:
 * `manifests-*` and `entries-processed`, data counters zero). `total-records` never changes;
 * the file totals move by what was added and removed. Everything else as {@link appendSnapshot}.
 * Throws TypeError when the added and deleted record counts differ (a replace that would lose
 * or duplicate rows) or for bad counts.
 */
export function replaceSnapshot(metadata: IcebergTableMetadata, options: ReplaceSnapshotOptions): IcebergTableMetadata {
  const added = options.addedFiles;
  const deleted = options.deletedFiles;
  checkCounts('addedFiles', added);
  checkCounts('deletedFiles', deleted);
  if (added.records !== deleted.records) {
    throw new TypeError(`a replace keeps the rows: added-records ${added.records} must equal deleted-records ${deleted.records}`);
  }
  const summary: Record<string, string> = {
    'added-data-files': String(added.files),
    'deleted-data-files': String(deleted.files),
    'added-records': String(added.records),
    'deleted-records': String(deleted.records),
    'added-files-size': String(added.sizeBytes),
    'removed-files-size': String(deleted.sizeBytes),
    'changed-partition-count': String(added.partitions),
  };
  if (options.manifests) {
    checkCounts('manifests', options.manifests);
    summary['manifests-created'] = String(options.manifests.created);
    summary['manifests-replaced'] = String(options.manifests.replaced);
    summary['manifests-kept'] = String(options.manifests.kept);
    summary['entries-processed'] = String(options.manifests.entriesProcessed);
  }
  return addSnapshot(metadata, options, options.operation ?? 'replace', {
    summary,
    totalDeltas: { 'total-records': 0, 'total-files-size': added.sizeBytes - deleted.sizeBytes, 'total-data-files': added.files - deleted.files },
  });
}

function checkCounts(name: string, counts: object): void {
  for (const [key, value] of Object.entries(counts)) {
    if (!Number.isSafeInteger(value) || (value as number) < 0) throw new TypeError(`${name}.${key} must be a non-negative safe integer, got ${String(value)}`);
  }
}

/** The new metadata-log: the previous file appended, the oldest dropped beyond `entriesMax`. */
function nextMetadataLog(metadata: IcebergTableMetadata, previousMetadataPath: string, entriesMax: number): IcebergMetadataLogEntry[] {
  return [...metadata['metadata-log'], { 'timestamp-ms': metadata['last-updated-ms'], 'metadata-file': previousMetadataPath }].slice(-entriesMax);
}

function checkedLogMax(entriesMax: number | undefined): number {
  const logMax = entriesMax ?? METADATA_LOG_ENTRIES_MAX_DEFAULT;
  if (!Number.isSafeInteger(logMax) || logMax < 1) throw new TypeError(`metadataLogEntriesMax must be a positive integer, got ${logMax}`);
  return logMax;
}

function checkBase(metadata: IcebergTableMetadata): void {
  const problems = checkTableMetadata(metadata);
  if (problems.length > 0) {
    throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `Iceberg table metadata is not valid: ${problems.join('; ')}`);
  }
}

/** The shared part of every new snapshot: ids, sequence number, totals, logs, refs. */
function addSnapshot(
  metadata: IcebergTableMetadata,
  options: SnapshotCommonOptions,
  operation: 'append' | 'replace' | 'overwrite',
  change: { summary: Record<string, string>; totalDeltas: Record<'total-records' | 'total-files-size' | 'total-data-files', number> },
): IcebergTableMetadata {
  checkBase(metadata);
  checkSnapshotId('snapshotId', options.snapshotId);
  if (metadata.snapshots.some((snapshot) => snapshot['snapshot-id'] === options.snapshotId)) {
    throw new TypeError(`snapshot id ${options.snapshotId} is already used in the table`);
  }
  checkAbsolutePath('manifestListPath', options.manifestListPath);
  checkAbsolutePath('previousMetadataPath', options.previousMetadataPath);
  checkMs('nowMs', options.nowMs);
  const extra = options.summaryExtra ?? {};
  checkStringMap('summaryExtra', extra);
  for (const key of Object.keys(extra)) {
    if (STANDARD_SUMMARY_KEYS.has(key)) throw new TypeError(`summaryExtra may not set the standard summary key ${key}`);
  }
  const logMax = checkedLogMax(options.metadataLogEntriesMax);

  const commitMs = Math.max(options.nowMs, metadata['last-updated-ms'] + 1);
  const parent = currentSnapshot(metadata);
  const sequenceNumber = metadata['last-sequence-number'] + 1;

  const summary: Record<string, string> = { operation, ...change.summary };
  const totals: [string, number][] = [
    ['total-records', change.totalDeltas['total-records']],
    ['total-files-size', change.totalDeltas['total-files-size']],
    ['total-data-files', change.totalDeltas['total-data-files']],
    ['total-delete-files', 0],
    ['total-position-deletes', 0],
    ['total-equality-deletes', 0],
  ];
  for (const [key, delta] of totals) {
    const previous = parent === undefined ? 0 : parseCount(parent.summary[key]);
    if (previous !== undefined) summary[key] = String(previous + delta);
  }
  Object.assign(summary, extra);
  // Stamped later than the clock says (the table's last update is ahead of it): the real time
  // goes beside, so the snapshot's age stays known (snapshotMadeAtMs).
  if (commitMs !== options.nowMs) summary[COMMITTED_AT_SUMMARY_KEY] = String(options.nowMs);

  const snapshot: IcebergSnapshot = {
    'sequence-number': sequenceNumber,
    'snapshot-id': options.snapshotId,
    ...(parent === undefined ? {} : { 'parent-snapshot-id': parent['snapshot-id'] }),
    'timestamp-ms': commitMs,
    summary,
    'manifest-list': options.manifestListPath,
    'schema-id': metadata['current-schema-id'],
  };

  const next: IcebergTableMetadata = {
    ...metadata,
    'last-sequence-number': sequenceNumber,
    'last-updated-ms': commitMs,
    'current-snapshot-id': options.snapshotId,
    refs: { ...metadata.refs, main: { ...metadata.refs['main'], 'snapshot-id': options.snapshotId, type: 'branch' } },
    snapshots: [...metadata.snapshots, snapshot],
    'snapshot-log': [...metadata['snapshot-log'], { 'timestamp-ms': commitMs, 'snapshot-id': options.snapshotId }],
    'metadata-log': nextMetadataLog(metadata, options.previousMetadataPath, logMax),
  };
  assertValid(checkTableMetadata(next));
  return next;
}

/** What {@link expireSnapshots} keeps and records. */
export interface ExpireSnapshotsOptions {
  /** The newest snapshots kept (by sequence number); the current one and every ref's are kept always. */
  retainLast: number;
  /** The clock: the metadata's update time, and what the ages below are from (see {@link retainedSnapshotIds}). */
  nowMs: number;
  previousMetadataPath: string;
  metadataLogEntriesMax?: number;
  /** See {@link retainedSnapshotIds}: the parents of file-removing snapshots committed since then are kept too. */
  keepRemovedSinceMs?: number;
  /** See {@link retainedSnapshotIds}: every snapshot committed since then is kept too. */
  keepMadeSinceMs?: number;
  /** See {@link retainedSnapshotIds}: how long the expiring process has seen each snapshot (id → ms, on a clock no step moves). */
  seenForMs?: ReadonlyMap<number, number>;
}

/**
 * The summary key a snapshot records its writer's clock under when its `timestamp-ms` had to be
 * later: a commit is stamped no earlier than the table's last update (Iceberg's readers expect
 * the snapshot log in order), so once one commit was stamped by a clock that was ahead, every
 * later one is stamped after it for as long as the lead lasts — a year ahead, a year.
 */
export const COMMITTED_AT_SUMMARY_KEY = 'auditlake.committed-at-ms';

/**
 * How far apart the clocks of the nodes writing and expiring one table are assumed to be at most:
 * an hour, as the floor of the orphan age (`ORPHAN_MIN_AGE_FLOOR_MS`) assumes. A snapshot made
 * by a writer's clock up to this far past the expiring node's is young (the one clock ahead, or
 * the other stepped back); beyond it, its time tells no age. Replaced files kept for a grace are
 * also deleted once their stamp is older than the grace by this much, whoever has seen them.
 */
export const NODE_CLOCK_SKEW_MAX_MS = 60 * 60 * 1000;

/**
 * How far past `nowMs` a snapshot's `timestamp-ms` may be and still count as young by it: where
 * the writer recorded its own clock beside it ({@link COMMITTED_AT_SUMMARY_KEY}), the stamp
 * carries an earlier commit's lead, not a clock, and allowed {@link NODE_CLOCK_SKEW_MAX_MS} a
 * lead of minutes would keep every snapshot of those minutes young (elsewhere the stamp is the
 * writer's time, allowed that much).
 */
export const SNAPSHOT_CLOCK_AHEAD_TOLERANCE_MS = 60_000;

/** When a snapshot was made, as well as its writer knew: the clock it recorded beside a later stamp, else its `timestamp-ms`. */
export function snapshotMadeAtMs(snapshot: IcebergSnapshot): number {
  const recorded = snapshot.summary[COMMITTED_AT_SUMMARY_KEY];
  const ms = recorded === undefined ? Number.NaN : Number(recorded);
  return Number.isSafeInteger(ms) && ms >= 0 ? ms : snapshot['timestamp-ms'];
}

/**
 * The snapshot ids {@link expireSnapshots} keeps: the newest `retainLast`, the current one, every
 * ref's — and, when the current snapshot carries no tiering watermark (another engine committed
 * on top), every ancestor back to the newest one that does: the watermark is read by walking
 * `parent-snapshot-id` from the current snapshot, so expiring that snapshot or one on the way
 * would lose where tiering stopped, and the next sweep would tier everything again
 * (docs/iceberg-layout.md §2, §7). Given `keepRemovedSinceMs`, also the parent of every snapshot
 * committed since then that took data files out; given `keepMadeSinceMs`, every snapshot
 * committed since then. Those ages are from {@link snapshotMadeAtMs}: a snapshot is young by its
 * own time, by its `timestamp-ms`, or by the earliest of it and every snapshot made after it (by
 * sequence number); given `nowMs`, a time after it is not a young one beyond
 * {@link NODE_CLOCK_SKEW_MAX_MS} (a carried `timestamp-ms`, beyond
 * {@link SNAPSHOT_CLOCK_AHEAD_TOLERANCE_MS}). Given `nowMs` and `seenForMs` (how long the
 * expiring process has seen each snapshot on the table, by a clock no step or skew moves), a
 * snapshot seen for less than the grace (`nowMs` minus the since) is young too, unless every
 * time of it is more than {@link NODE_CLOCK_SKEW_MAX_MS} outside the grace.
 */
export function retainedSnapshotIds(metadata: IcebergTableMetadata, retainLast: number, keepRemovedSinceMs?: number, keepMadeSinceMs?: number, nowMs?: number, seenForMs?: ReadonlyMap<number, number>): Set<number> {
  if (!Number.isSafeInteger(retainLast) || retainLast < 1) throw new TypeError(`retainLast must be a positive integer, got ${retainLast}`);
  const newestFirst = [...metadata.snapshots].sort((a, b) => b['sequence-number'] - a['sequence-number']);
  const kept = new Set(newestFirst.slice(0, retainLast).map((snapshot) => snapshot['snapshot-id']));
  // A reader plans from the snapshot that was current when it loaded the metadata, reading its
  // manifest list and manifests next: one that young is not taken from under it.
  // Ages are from snapshotMadeAtMs, not stamps: a single commit stamped by a clock a year ahead
  // kept every later snapshot young for that year, and the table grew by one each commit
  // (review: ~830 bytes a commit to every metadata file). A time after `nowMs` beyond the skew
  // nodes' clocks may have tells no age; within it, the snapshot is young (taken as ageless, one
  // made just before a failover to a node minutes behind, or before this node's clock stepped
  // back, counted as old, and its parent went with the replaced files at once: review). A
  // carried stamp is allowed only a minute, or a lead of minutes kept every snapshot of those
  // minutes young. A snapshot was made no later than any made after it, so the least time of
  // it and its successors is a time it was made by too, and it is young by either: by its own
  // alone, one made by a clock ahead of the expiring node's counted as old at once and a
  // compaction's parent went with its replaced files while readers still listed them (second
  // review); by the least alone, a successor from a clock behind made it old at once (third).
  const earliest = new Map<number, number>();
  let earliestAfter = Number.POSITIVE_INFINITY;
  for (const snapshot of newestFirst) {
    earliestAfter = Math.min(earliestAfter, snapshotMadeAtMs(snapshot));
    earliest.set(snapshot['snapshot-id'], earliestAfter);
  }
  const within = (ms: number, sinceMs: number, aheadMs = NODE_CLOCK_SKEW_MAX_MS) => ms >= sinceMs && (nowMs === undefined || ms <= nowMs + aheadMs);
  // Its `timestamp-ms` too: never before the table's last update, so a snapshot made by a clock
  // behind the other writers' (its recorded time behind with it) is still dated near when it
  // was made, and a compaction from a node 20 minutes behind no longer lost its replaced files to
  // the next expiry at once (review).
  // (Beside a recorded clock, `timestamp-ms` carries an earlier commit's lead, not a clock: it is
  // allowed a minute ahead, where the writer's own time is allowed the skew.)
  const youngByTime = (snapshot: IcebergSnapshot, sinceMs: number) =>
    within(snapshotMadeAtMs(snapshot), sinceMs) || within(earliest.get(snapshot['snapshot-id']) as number, sinceMs) || within(snapshot['timestamp-ms'], sinceMs, SNAPSHOT_CLOCK_AHEAD_TOLERANCE_MS);
  // Seen by the expiring process for less than the grace: a lower bound of its age that no clock
  // of any node moves. Each time alone was not: a failover to a node 20 minutes ahead, or this
  // node's clock stepped forward, made a compaction of seconds ago 20 minutes old, and its
  // parent went with the replaced files under a search that had just listed them (review). A
  // time more than the skew outside the grace ends it, so a process restarted between every
  // expiry (never seeing a snapshot for long) still lets it go.
  const youngBySight = (snapshot: IcebergSnapshot, sinceMs: number) => {
    const seenMs = seenForMs?.get(snapshot['snapshot-id']);
    if (seenMs === undefined || nowMs === undefined || seenMs >= nowMs - sinceMs) return false;
    const times = [snapshotMadeAtMs(snapshot), earliest.get(snapshot['snapshot-id']) as number, snapshot['timestamp-ms']];
    return times.some((ms) => within(ms, sinceMs - NODE_CLOCK_SKEW_MAX_MS));
  };
  const young = (snapshot: IcebergSnapshot, sinceMs: number) => youngByTime(snapshot, sinceMs) || youngBySight(snapshot, sinceMs);
  if (keepMadeSinceMs !== undefined) for (const snapshot of metadata.snapshots) if (young(snapshot, keepMadeSinceMs)) kept.add(snapshot['snapshot-id']);
  if (keepRemovedSinceMs !== undefined) {
    // A reader lists a table's files and then reads them, a search over many files for minutes:
    // the files a snapshot took out (a compaction, a rewrite) stay readable until it is that old,
    // as its parent (which names every one of them) is kept — and the snapshot itself, while its
    // parent is there: it is the only record of the removal and its time, and once it expired
    // the next expiry (the next run, or a sweep's seconds later) took the parent and the files
    // with it (review). Appends and manifest rewrites remove no data file, so under a busy sweep
    // this keeps two snapshots per compaction, not every commit of the grace period.
    const present = new Set(metadata.snapshots.map((snapshot) => snapshot['snapshot-id']));
    for (const snapshot of metadata.snapshots) {
      const parent = snapshot['parent-snapshot-id'];
      if (parent === undefined || !removesDataFiles(snapshot) || !young(snapshot, keepRemovedSinceMs)) continue;
      kept.add(parent);
      if (present.has(parent)) kept.add(snapshot['snapshot-id']);
    }
  }
  const current = currentSnapshot(metadata);
  if (current) kept.add(current['snapshot-id']);
  for (const ref of Object.values(metadata.refs)) kept.add(ref['snapshot-id']);
  const ancestry = snapshotAncestry(metadata);
  const carrier = ancestry.findIndex((snapshot) => snapshot.summary[WATERMARK_SUMMARY_KEY] !== undefined);
  for (const snapshot of ancestry.slice(0, carrier + 1)) kept.add(snapshot['snapshot-id']);
  return kept;
}

/** Whether a snapshot took data files out: its summary counts some, or (another engine's, without the count) it is an overwrite or delete. */
function removesDataFiles(snapshot: IcebergSnapshot): boolean {
  const deleted = snapshot.summary['deleted-data-files'];
  if (deleted !== undefined) return Number(deleted) > 0;
  const operation = snapshot.summary['operation'];
  return operation === 'overwrite' || operation === 'delete';
}

/**
 * The current snapshot and its retained ancestors, newest first, following
 * `parent-snapshot-id`: the walk ends at the first snapshot, or at an ancestor that expired
 * (what it carried is gone), or at a cycle (a broken table). Empty for a table without snapshots.
 */
export function snapshotAncestry(metadata: IcebergTableMetadata): IcebergSnapshot[] {
  const byId = new Map<number, IcebergSnapshot>(metadata.snapshots.map((snapshot) => [snapshot['snapshot-id'], snapshot]));
  const ancestry: IcebergSnapshot[] = [];
  const visited = new Set<number>();
  let id: number | undefined = metadata['current-snapshot-id'];
  while (id !== undefined && id !== NO_CURRENT_SNAPSHOT_ID && !visited.has(id)) {
    visited.add(id);
    const snapshot = byId.get(id);
    if (snapshot === undefined) break;
    ancestry.push(snapshot);
    id = snapshot['parent-snapshot-id'];
  }
  return ancestry;
}

/**
 * The newest snapshot of the current snapshot's {@link snapshotAncestry} whose summary has
 * `key`; undefined when none does.
 */
export function newestAncestorCarrying(metadata: IcebergTableMetadata, key: string): IcebergSnapshot | undefined {
  return snapshotAncestry(metadata).find((snapshot) => snapshot.summary[key] !== undefined);
}

/**
 * The snapshot log once `kept` are the table's snapshots: an entry of a snapshot no longer kept
 * removes it and every entry before it (spec, `snapshot-log`: "all entries before a snapshot that
 * has expired should be removed"; Java's TableMetadata does the same). Kept entries before a
 * removed one would leave a gap: a read "as of" a time inside it finds the last kept entry
 * before it — the parent of a young compaction, or a tagged snapshot, that expiry keeps while
 * the snapshots after it go — and reads that snapshot's rows, not the ones current then (review:
 * Spark's and Trino's TIMESTAMP AS OF would have left out every row appended in the gap).
 */
function snapshotLogAfterExpiry(log: readonly IcebergSnapshotLogEntry[], kept: ReadonlySet<number>): IcebergSnapshotLogEntry[] {
  const next: IcebergSnapshotLogEntry[] = [];
  for (const entry of log) {
    if (kept.has(entry['snapshot-id'])) next.push(entry);
    else next.length = 0;
  }
  return next;
}

/**
 * The next table metadata after expiring every snapshot {@link retainedSnapshotIds} does not
 * keep (spec "Snapshot Retention Policy"): no new snapshot; `snapshots` keeps only the retained
 * ones, `snapshot-log` the entries after the last expired one; a `metadata-log` entry for the previous file as in every commit.
 * A retained snapshot whose parent expired keeps its `parent-snapshot-id` (the spec allows an
 * ancestor to be gone). Returns undefined when nothing would expire.
 */
export function expireSnapshots(metadata: IcebergTableMetadata, options: ExpireSnapshotsOptions): IcebergTableMetadata | undefined {
  checkBase(metadata);
  checkAbsolutePath('previousMetadataPath', options.previousMetadataPath);
  checkMs('nowMs', options.nowMs);
  const logMax = checkedLogMax(options.metadataLogEntriesMax);
  const kept = retainedSnapshotIds(metadata, options.retainLast, options.keepRemovedSinceMs, options.keepMadeSinceMs, options.nowMs, options.seenForMs);
  if (metadata.snapshots.every((snapshot) => kept.has(snapshot['snapshot-id']))) return undefined;
  const next: IcebergTableMetadata = {
    ...metadata,
    'last-updated-ms': Math.max(options.nowMs, metadata['last-updated-ms'] + 1),
    snapshots: metadata.snapshots.filter((snapshot) => kept.has(snapshot['snapshot-id'])),
    'snapshot-log': snapshotLogAfterExpiry(metadata['snapshot-log'], kept),
    'metadata-log': nextMetadataLog(metadata, options.previousMetadataPath, logMax),
  };
  // Both lists name their snapshot (spec "Table Statistics" and "Partition Statistics"): an
  // entry for an expired one would point readers at a snapshot that no longer exists.
  for (const field of ['statistics', 'partition-statistics']) {
    if (Array.isArray(metadata[field])) {
      next[field] = (metadata[field] as Array<{ 'snapshot-id'?: number }>).filter((entry) => entry['snapshot-id'] === undefined || kept.has(entry['snapshot-id']));
    }
  }
  assertValid(checkTableMetadata(next));
  return next;
}

/**
 * The next table metadata without the branches and tags (every ref but `main`) that point at a
 * snapshot made before the current one — neither it nor a descendant of it — and no new
 * snapshot; undefined when there are none. An erasure's purge drops them: a snapshot they kept
 * would keep the erased values. A ref made since (on the current snapshot or after it, such as
 * another engine's write-audit-publish branch) holds none and is kept.
 */
export function dropRefsOffCurrent(metadata: IcebergTableMetadata, options: { nowMs: number; previousMetadataPath: string; metadataLogEntriesMax?: number }): IcebergTableMetadata | undefined {
  checkBase(metadata);
  checkAbsolutePath('previousMetadataPath', options.previousMetadataPath);
  checkMs('nowMs', options.nowMs);
  const current = metadata['current-snapshot-id'];
  const byId = new Map<number, IcebergSnapshot>(metadata.snapshots.map((snapshot) => [snapshot['snapshot-id'], snapshot]));
  const fromCurrent = (id: number): boolean => {
    const seen = new Set<number>();
    for (let at: IcebergSnapshot | undefined = byId.get(id); at !== undefined && !seen.has(at['snapshot-id']); at = byId.get(at['parent-snapshot-id'] ?? -1)) {
      if (at['snapshot-id'] === current) return true;
      seen.add(at['snapshot-id']);
    }
    return false;
  };
  const refs = Object.fromEntries(Object.entries(metadata.refs).filter(([name, ref]) => name === 'main' || fromCurrent(ref['snapshot-id'])));
  if (Object.keys(refs).length === Object.keys(metadata.refs).length) return undefined;
  const next: IcebergTableMetadata = {
    ...metadata,
    refs,
    'last-updated-ms': Math.max(options.nowMs, metadata['last-updated-ms'] + 1),
    'metadata-log': nextMetadataLog(metadata, options.previousMetadataPath, checkedLogMax(options.metadataLogEntriesMax)),
  };
  assertValid(checkTableMetadata(next));
  return next;
}

/**
 * The next table metadata with `set` properties written and `remove` ones dropped, and no new
 * snapshot (a properties-only commit, as Java's `UpdateProperties`): a `metadata-log` entry for
 * the previous file as in every commit. Returns undefined when nothing would change.
 */
export function updateProperties(
  metadata: IcebergTableMetadata,
  options: { set?: Readonly<Record<string, string>>; remove?: readonly string[]; nowMs: number; previousMetadataPath: string; metadataLogEntriesMax?: number },
): IcebergTableMetadata | undefined {
  checkBase(metadata);
  checkAbsolutePath('previousMetadataPath', options.previousMetadataPath);
  checkMs('nowMs', options.nowMs);
  const set = options.set ?? {};
  checkStringMap('set', set);
  const properties: Record<string, string> = { ...metadata.properties, ...set };
  for (const key of options.remove ?? []) delete properties[key];
  const before = metadata.properties;
  const keys = new Set([...Object.keys(before), ...Object.keys(properties)]);
  if ([...keys].every((key) => before[key] === properties[key])) return undefined;
  return {
    ...metadata,
    properties,
    'last-updated-ms': Math.max(options.nowMs, metadata['last-updated-ms'] + 1),
    'metadata-log': nextMetadataLog(metadata, options.previousMetadataPath, checkedLogMax(options.metadataLogEntriesMax)),
  };
}

/**
 * The next table metadata with the `metadata-log` cut to its newest `entriesMax` entries after
 * recording the previous file (`write.metadata.previous-versions-max`): the metadata files that
 * fall off may then be deleted. Returns undefined when the log is already within the limit.
 */
export function trimMetadataLog(metadata: IcebergTableMetadata, options: { entriesMax: number; nowMs: number; previousMetadataPath: string }): IcebergTableMetadata | undefined {
  checkBase(metadata);
  checkAbsolutePath('previousMetadataPath', options.previousMetadataPath);
  checkMs('nowMs', options.nowMs);
  const logMax = checkedLogMax(options.entriesMax);
  if (metadata['metadata-log'].length < logMax) return undefined;
  const next: IcebergTableMetadata = {
    ...metadata,
    'last-updated-ms': Math.max(options.nowMs, metadata['last-updated-ms'] + 1),
    'metadata-log': nextMetadataLog(metadata, options.previousMetadataPath, logMax),
  };
  assertValid(checkTableMetadata(next));
  return next;
}

/** The current snapshot, or undefined for a table without one. */
export function currentSnapshot(metadata: IcebergTableMetadata): IcebergSnapshot | undefined {
  const id = metadata['current-snapshot-id'];
  if (id === NO_CURRENT_SNAPSHOT_ID || id === undefined || id === null) return undefined;
  return metadata.snapshots.find((snapshot) => snapshot['snapshot-id'] === id);
}

/**
 * Parses a `vN.metadata.json` text. Throws AuditError AUDIT_TIER_TARGET_UNUSABLE when it is not
 * JSON, not valid v2 metadata for this package ({@link checkTableMetadata}), or holds a snapshot
 * id beyond 2^53 (written by another engine): JS numbers would round such an id, and writing it
 * back as a `parent-snapshot-id` would break the table's ancestry, so it is refused instead.
 */
export function parseTableMetadata(text: string): IcebergTableMetadata {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, 'Iceberg table metadata is not JSON', { cause: err });
  }
  const problems = checkTableMetadata(parsed);
  if (problems.length > 0) {
    throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `Iceberg table metadata is not valid: ${problems.join('; ')}`);
  }
  return parsed as IcebergTableMetadata;
}

/** Java's tolerance for log timestamps against `last-updated-ms` (`TableMetadata`). */
const LOG_TIMESTAMP_TOLERANCE_MS = 60_000;

/**
 * What is wrong with `value` as v2 table metadata this package can extend, as a list of
 * problems (empty when none): the v2-required fields with their JSON types, string-valued
 * properties and summaries with `operation`, safe-integer snapshot ids, a current snapshot
 * that exists and equals `refs.main`, refs that point at snapshots, sequence numbers not above
 * `last-sequence-number`, and both logs sorted and not later than `last-updated-ms` (beyond
 * Java's one-minute tolerance) — the checks Java makes when it loads metadata.
 */
export function checkTableMetadata(value: unknown): string[] {
  const problems: string[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return ['not a JSON object'];
  const m = value as Record<string, unknown>;
  if (m['format-version'] !== 2) problems.push(`format-version must be 2, got ${String(m['format-version'])}`);
  if (typeof m['table-uuid'] !== 'string' || !UUID_PATTERN.test(m['table-uuid'])) problems.push('table-uuid must be a UUID');
  if (typeof m['location'] !== 'string' || m['location'] === '') problems.push('location must be a string');
  for (const key of ['last-sequence-number', 'last-updated-ms', 'last-column-id', 'current-schema-id', 'default-spec-id', 'last-partition-id', 'default-sort-order-id']) {
    if (!Number.isSafeInteger(m[key])) problems.push(`${key} must be an integer`);
  }
  for (const key of ['schemas', 'partition-specs', 'sort-orders']) {
    if (!Array.isArray(m[key]) || m[key].length === 0) problems.push(`${key} must be a non-empty list`);
  }
  if (Array.isArray(m['schemas']) && !m['schemas'].some((s: unknown) => (s as IcebergSchema)['schema-id'] === m['current-schema-id'])) {
    problems.push('current-schema-id names no schema');
  }
  if (m['schema'] !== undefined || m['partition-spec'] !== undefined) problems.push('v1 fields schema/partition-spec must be omitted in v2');
  if (m['properties'] !== undefined) problems.push(...stringMapProblems('properties', m['properties']));
  if (problems.length > 0) return problems;

  const metadata = m as IcebergTableMetadata;
  const snapshots = metadata.snapshots ?? [];
  const refs = metadata.refs ?? {};
  const snapshotLog = metadata['snapshot-log'] ?? [];
  const metadataLog = metadata['metadata-log'] ?? [];
  if (!Array.isArray(snapshots) || !Array.isArray(snapshotLog) || !Array.isArray(metadataLog) || typeof refs !== 'object' || refs === null) {
    return ['snapshots, snapshot-log and metadata-log must be lists, refs an object'];
  }
  const isObject = (entry: unknown): boolean => typeof entry === 'object' && entry !== null && !Array.isArray(entry);
  if (![...snapshots, ...snapshotLog, ...metadataLog, ...Object.values(refs)].every(isObject)) {
    return ['snapshots, log entries and refs must be JSON objects'];
  }
  const ids = new Set<number>();
  for (const snapshot of snapshots) {
    const id = snapshot['snapshot-id'];
    if (!Number.isSafeInteger(id) || id <= 0) {
      problems.push(`snapshot id ${String(id)} is not a positive integer below 2^53`);
      continue;
    }
    if (ids.has(id)) problems.push(`snapshot id ${id} appears twice`);
    ids.add(id);
    const parentId = snapshot['parent-snapshot-id'];
    if (parentId !== undefined && (!Number.isSafeInteger(parentId) || parentId <= 0)) {
      problems.push(`snapshot ${id}: parent-snapshot-id ${String(parentId)} is not a positive integer below 2^53`);
    }
    if (!Number.isSafeInteger(snapshot['sequence-number']) || snapshot['sequence-number'] > metadata['last-sequence-number']) {
      problems.push(`snapshot ${id}: sequence-number must be an integer not above last-sequence-number`);
    }
    if (typeof snapshot['manifest-list'] !== 'string') problems.push(`snapshot ${id}: manifest-list is required`);
    problems.push(...stringMapProblems(`snapshot ${id} summary`, snapshot.summary));
    if (typeof snapshot.summary === 'object' && snapshot.summary !== null && typeof snapshot.summary['operation'] !== 'string') {
      problems.push(`snapshot ${id}: summary has no operation`);
    }
  }
  const current = metadata['current-snapshot-id'];
  const hasCurrent = current !== undefined && current !== null && current !== NO_CURRENT_SNAPSHOT_ID;
  if (hasCurrent && !ids.has(current)) problems.push(`current-snapshot-id ${String(current)} names no snapshot`);
  for (const [name, ref] of Object.entries(refs)) {
    if (!ids.has(ref['snapshot-id'])) problems.push(`ref ${name} names no snapshot`);
  }
  const mainId = refs['main']?.['snapshot-id'];
  if (hasCurrent ? mainId !== current : mainId !== undefined) problems.push('refs.main must equal current-snapshot-id');
  const lastUpdatedMs = metadata['last-updated-ms'];
  for (const [name, log] of [['snapshot-log', snapshotLog], ['metadata-log', metadataLog]] as const) {
    let previousMs = -Infinity;
    for (const entry of log) {
      const ms = entry['timestamp-ms'];
      if (!Number.isSafeInteger(ms)) problems.push(`${name} has an entry without timestamp-ms`);
      else if (ms < previousMs) problems.push(`${name} is not sorted by time`);
      else previousMs = ms;
    }
    if (previousMs - LOG_TIMESTAMP_TOLERANCE_MS > lastUpdatedMs) problems.push(`last-updated-ms is earlier than the last ${name} entry`);
  }
  return problems;
}

/** A broken invariant in metadata this module built: a bug here, never the caller's input. */
function assertValid(problems: readonly string[]): void {
  if (problems.length > 0) throw new Error(`assertion failed: built invalid Iceberg metadata: ${problems.join('; ')}`);
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An absolute URI: a scheme, `://`, and more. */
const ABSOLUTE_URI_PATTERN = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]+\/?.*$/;

function checkLocation(location: string): void {
  checkAbsolutePath('location', location);
  if (location.endsWith('/')) throw new TypeError(`location must not end with a slash, got ${location}`);
}

function checkAbsolutePath(name: string, path: string): void {
  if (typeof path !== 'string' || !ABSOLUTE_URI_PATTERN.test(path)) {
    throw new TypeError(`${name} must be an absolute URI (scheme://…), got ${String(path)}`);
  }
}

function checkMs(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`${name} must be a non-negative integer of epoch ms, got ${value}`);
}

function checkSnapshotId(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive integer up to 2^53 - 1, got ${value}`);
}

function checkStringMap(name: string, value: unknown): void {
  const problems = stringMapProblems(name, value);
  if (problems.length > 0) throw new TypeError(problems.join('; '));
}

/** Java reads properties and summaries with `JsonUtil.getString`, which rejects non-strings. */
function stringMapProblems(name: string, value: unknown): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${name} must be an object`];
  return Object.entries(value)
    .filter(([, entry]) => typeof entry !== 'string')
    .map(([key]) => `${name}: value of ${key} must be a string`);
}

/** A summary counter as a number, or undefined when absent or not a decimal count. */
function parseCount(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const count = Number(value);
  return Number.isSafeInteger(count) ? count : undefined;
}
