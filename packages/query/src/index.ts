export { mergedSearch, type MergedEvent, type MergedSearchOptions, type MergedSearchResult } from './merged-search.js';
export type { TierFile, TierSource } from './tier-source.js';
export { newestFirstStream } from './newest-first-stream.js';
