/**
 * A file a compaction (or manifest rewrite) took out of the table is deleted only once that
 * commit is this old, in both modes: a search that listed the files before it has long finished
 * reading them by then. An erasure's rewrite does not wait: the old values must go.
 */
export const REPLACED_FILE_GRACE_MS = 15 * 60 * 1000;
