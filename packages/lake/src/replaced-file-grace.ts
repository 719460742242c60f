/**
 * A file a compaction (or manifest rewrite) took out of the table is deleted only once that
 * commit is this old, in both modes: a search that listed the files before it has long finished
 * reading them by then. An erasure's rewrite does not wait: the old values must go.
 */
export const REPLACED_FILE_GRACE_MS = 15 * 60 * 1000;

/**
 * The sweep's expiry between maintenance runs expires a snapshot only once this old: a reader
 * (Trino, Spark planning a query) loads the metadata, then reads the current snapshot's manifest
 * list and manifests. Back-to-back sweeps commit several times a second, and expiring down to
 * `snapshot.retain.last` then deleted the manifest list a reader had just been pointed at
 * (review: icebird failed 30 of 30 reads made 1 s after loading, at retain.last 1). Appends remove
 * no data file, so only manifest lists and merged manifests were at stake. A maintenance run
 * (scheduled, or asked for) expires down to `snapshot.retain.last` whatever their age.
 */
export const SNAPSHOT_READ_GRACE_MS = 60 * 1000;

/**
 * The default clock replaced files and snapshots are seen by (`replacedSeen`, `snapshotsSeen`):
 * one no step of the wall clock, nor another node's clock, moves.
 */
export const monotonicMs = (): number => performance.now();
