// The settings every tier file is written with: one place, as the whole-file writer, the
// column-chunk writer and the assemblers must agree on them byte for byte.

/**
 * Target uncompressed size of a data page (hyparquet-writer's default is 1 MiB). A reader
 * that wants a group's newest rows (a one-day window, newest first) decompresses and decodes
 * only the pages holding them, so smaller pages mean less work: at 128 KiB the query column of
 * a 10,000-row group is about 14 pages, not 2. Pages this size compress within a few per cent of
 * 1 MiB ones.
 */
export const PAGE_SIZE_BYTES = 128 * 1024;

/**
 * Longest string min/max kept in column statistics, in UTF-8 bytes. Long enough that the
 * short columns (a UUID event_id is 36 bytes; source, user_id, action) keep exact bounds;
 * long free text (query, details) gets truncated bounds, which hyparquet-writer rounds
 * correctly (a prefix for min, a successor for max) and flags as inexact. Integer and
 * timestamp statistics are never truncated.
 */
export const STATISTICS_STRING_BYTES_MAX = 64;

/** `created_by` in the file footer, so a file found in a bucket says what wrote it. */
export const PARQUET_CREATED_BY = 'auditlake @auditlake/format (hyparquet-writer)';
