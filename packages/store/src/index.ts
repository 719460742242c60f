export { AuditStore, CLUSTER_LOG_TAIL_BYTES, LEVELDB_TUNING, type AuditStoreOptions, type DivertResult, type OutboxEntry, type PruneResult, type StoreStatus } from './audit-store.js';
export type { AppendOptions, AppendResult, MetaPut, StoredRef, Sequencer, WriterPosition } from './event-writer.js';
export type { TermRun, TermStart } from './term-runs.js';
export { DAY_MS, RetentionPruner, type PrunePolicy, type RetentionPrunerOptions } from './retention-pruner.js';
export * as eventKeys from './event-keys.js';
export { INDEX_FIELD, indexPrefixes, type IndexField, type IndexTerms } from './index-keys.js';
export type { RegisteredKey } from './integrity-index.js';
export type { PrunedRange } from './pruned-ranges.js';
export type { ChainHead } from './record-chain.js';
