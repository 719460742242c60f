export { mergedSearch, type ErasureMask, type LocalBatches, type MergedEvent, type MergedSearchOptions, type MergedSearchResult } from './merged-search.js';
/** The tier interface the reader reads through; `@auditlake/lake` defines it. */
export type { TierFile, TierSource } from '@auditlake/lake';
export { newestFirstStream } from './newest-first-stream.js';
export { newestFirstPage } from './newest-first-page.js';
