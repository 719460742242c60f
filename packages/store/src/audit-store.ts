import { mkdir, readdir, stat } from 'node:fs/promises';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { join } from 'node:path';
import { AuditError, AuditErrorCode, compileFilter, INTEGRITY_ACTIONS, encodeEvent, storedEventJson, storedToOutputJson, toAuditEvent, upperTimeMs, type AuditEvent, type EncodedEvent, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { Level } from 'level';
import {
  PREFIX,
  checkpointKey,
  erasureKey,
  decodeUint,
  copiesKey,
  idKey,
  keyKey,
  localKey,
  metaKey,
  outboxKey,
  parseOutboxNumber,
  parseSeqFromSeqKey,
  prefixEnd,
  seqKey,
  seqOfSuffix,
  timeKey,
  timeKeySuffix,
  timeLowerBound,
  timeUpperBoundInclusive,
} from './event-keys.js';
import { readReplicatedEntry, type ReplicatedEntry } from './replicated-entry.js';
import { UnsentNewIds } from './unsent-new-ids.js';
import { TimeAssignedEntries } from './time-assigned-entries.js';
import { parseBytesInTurns, parseInTurns } from './parse-in-turns.js';
import { LogTail } from './log-tail.js';
import { IndexWriter, termsFromJson, type IndexSink } from './index-writer.js';
import { planIndexedSearch, tableNamesUnused } from './index-reader.js';
import { getManyInKeyOrder, storedAtSeq } from './point-reads.js';
import { rangeBatchesNewestFirst } from './range-values.js';
import { StoredEventText } from './stored-event-text.js';
import { tableNameKey, type IndexField } from './index-keys.js';
import { applyStoredErasures, backfillErasedIds, backfillErasureIndex, backfillIndexes } from './index-backfill.js';
import { ErasedIds, maskErasedRows, type ErasableRow } from './erased-ids.js';
import { lowerStoredJson } from './lower-stored-json.js';
import { PRUNED_IDS_KEEP_MS_DEFAULT, PrunedIds, type PrunedIdsFigures, type PrunedIdsLoad } from './pruned-ids.js';
import { backfillLedger } from './ledger-backfill.js';
import { TextSketchWriter } from './text-sketch-writer.js';
import { TEXT_BLOCK_SEQS, blockOfSeq, textSketchKey } from './text-sketch.js';
import { rebuildStaleSketches } from './text-sketch-writer.js';
import { CHAIN_HEAD_KEY, EventWriter, LOG_END_KEY, logEndValue, putEvent, trustedFreshIds, WRITER_YIELD_EVENTS, type AppendOptions, type AppendResult, type EventIdConflict, type ExclusiveContext, type Sequencer, type WriterPosition, type WrittenAppend } from './event-writer.js';
import { TermRuns, parseTermRun, termRunKey, termRunValue, type TermRun, type TermStart } from './term-runs.js';
import { contentHashAgainst, encodedContentReference, headOf, RecordChain, storedContentReference, type ChainHead, type ContentReference, type IntegrityEntry } from './record-chain.js';
import { addIntegrityPuts, erasureEntryOf, type RegisteredKey } from './integrity-index.js';
import { IngestClock } from './ingest-clock.js';
import { PrunedRanges, type PrunedRange } from './pruned-ranges.js';
import { prunedRangeOps, putPrunedRangeOps, readPrunedRanges } from './pruned-range-keys.js';
import { NONE_FOUND, resendCandidates, tieredCopiesOf, type TieredCopyLookup } from './resent-after-retention.js';
import { DayLedger, type DayLedgerChange, type DayLedgerFilter, type DayLedgerPage, type DayLedgerRow } from './day-ledger.js';
import { SourceLedger, type SourceLedgerEntry, type SourceLedgerPage, type SourceLedgerSummary } from './source-ledger.js';
import { integrityKindOf, parsePublishedKey, parseSignedCheckpoint, type SignedCheckpoint } from '@auditlake/integrity';
import { carriedCoveredSeq, verifyCarriedCheckpoint, type CarriedCheckpoint } from './carried-checkpoint.js';
import { latchWriteFaults } from './write-fault-latch.js';
import { erasuresNamingHeldCopies } from './erasure-retention.js';
import { completeThroughSkip, ERASED_IDS_COMPLETE_KEY, ERASED_IDS_PAGE_MAX, ERASED_IDS_SYNC_KEY, erasedIdsCompleteOf, erasedIdsOwedOf, owedThrough, owedThroughTerm, type ErasedIdsComplete, erasedIdsPageOf, putErasedIdsPage, readErasedIdsPage, type ErasedIdsOwed, type ErasedIdsPage } from './erased-ids-sync.js';

/** What a sender's retention deleted where replicated entries skip seqs (AuditStore.skippedByRetention). */
export interface SkippedByRetention {
  /** Its ranges deleted by retention, with the chain hash at each one's end. */
  ranges?: readonly PrunedRange[];
  /** Its newest checkpoint whose record retention deleted. */
  checkpoint?: CarriedCheckpoint;
  /**
   * The newest event time its retention deleted (AuditStore.prunedTimeMax): an asker whose log
   * skips what it deleted takes it as its own, so it looks a re-send of one of those up in the
   * tier once it leads (resent-after-retention.ts).
   */
  timeMax?: number;
  /**
   * The sender did not prove it matched this log's end: by term alone (it knew no chain hash
   * there to compare: its retention deleted that entry), or it does not say (a node of an
   * earlier version). Nothing then links the entries to what this log holds, whatever ranges
   * come with them (they are cut to start after this log's end), so this log's end becomes where
   * it is unlinked (AuditStore.unlinkedThrough).
   */
  unproven?: boolean;
}

/**
 * LevelDB's memtable size. Each event writes three keys in different key ranges, so every
 * flushed file spans the whole key space and each flush soon means a compaction that rewrites
 * what it overlaps. With LevelDB's 4 MiB default, compaction was the largest CPU cost of a
 * cluster node (1.2–1.9 s of 5–7 s per node over 110,000 events); 32 MiB memtables flush an
 * eighth as often and cut it to about 0.5 s. Costs up to two memtables of memory per store.
 */
const WRITE_BUFFER_BYTES = 32 * 1024 * 1024;

/**
 * LevelDB's block size (default 4 KiB). Events are about 1 KB, so a 4 KiB block held four
 * of them and flushes and compactions paid per-block costs (restart points, checksums, index
 * entries, a compression call) every few events. In alternating three-node runs 16 KiB took
 * 10.6-12.0 s of CPU for 110,000 events against 12.7-14.5 s; 64 KiB measured alike. Lookups
 * by client-supplied eventId (one block read each) measured no slower.
 */
const BLOCK_BYTES = 16 * 1024;

/**
 * The log tail a node keeps (AuditStoreOptions.logTailBytes): about 250,000 events of ~1 KB,
 * some 20 s of a node's full ingest. A standby that lags by less pulls from it, and so does a
 * sweep that keeps up (readBySeq): between two sweeps come a tiering interval (10 s in the
 * soak) and the settle time of events, so the tail must hold more than that.
 */
export const LOG_TAIL_BYTES = 256 * 1024 * 1024;

/** Local-metadata name of the highest seq ever pruned or skipped (`#gapSeqMax`). */
const GAP_SEQ_MAX = 'gapSeqMax';
/** Local-metadata name of `#unlinkedThrough`. */
const UNLINKED_THROUGH = 'unlinkedThrough';

/**
 * LevelDB's cache of uncompressed blocks (its default is 8 MiB; `AuditStoreOptions.cacheBytes`,
 * `auditlake.store.cache.bytes`). An indexed search (user, table, denials) reads its events by
 * point lookups scattered over the window, each a 16 KiB block to find and decompress unless
 * cached; a page's time scan reads a few blocks more. With 8 MiB nearly every lookup missed.
 * 256 MiB holds the blocks of about a week of a million-event month (a million events are
 * ~1 GB uncompressed), the days investigations keep returning to: on 1,000,000 events over 30
 * days, after a warm-up, a user+7-day page's p50 was 4.07 ms with 64 MiB, 3.42 ms with 128 MiB
 * and 2.81 ms with 256 MiB; a one-day page's 2.06, 2.31 and 1.56 ms (one run each, scratch
 * node). The cache fills only as blocks are read, so a small store never holds it all.
 */
const BLOCK_CACHE_BYTES = 256 * 1024 * 1024;

/** How a stored event's JSON names its sourceSeq (the ledger reads only entries holding it). */
const SOURCE_SEQ_KEY = ',"sourceSeq":';
/** The erasure action, as bytes to search a replicated entry for before decoding it. */
const ERASE_ACTION_BYTES = Buffer.from(INTEGRITY_ACTIONS.erase);

/**
 * Local-metadata key of the seq of the newest checkpoint record retention deleted, whose
 * checkpoint index entry (`c!<seq>`) retention keeps: the next checkpoint links to it.
 */
const PRUNED_CHECKPOINT_KEY = localKey('prunedCheckpointSeq');
/** EventIds AuditStore.noteHeldByTier remembers at most (~10 MB at 100 bytes each). */
const TIER_HELD_REMEMBERED_MAX = 100_000;
/** An append's ids retention deleted here, where no tier can be asked about them (appendEncoded). */
const NO_PRUNED_TIMES: ReadonlyMap<string, number> = new Map();
/** Most times one append is chosen again (appendEncoded) before it fails. */
const APPEND_ROUNDS_MAX = 16;

/** Local-metadata key of #prunedTimeMax. */
const PRUNED_TIME_MAX_KEY = localKey('prunedTimeMax');
/** Local-metadata key set once #prunedTimeMax bounds every event time retention ever deleted from this store (#boundPrunedTimes). */
const PRUNED_TIME_MAX_COMPLETE_KEY = localKey('prunedTimeMaxComplete');
/** Local-metadata key of #tieredCountedThrough. */
const TIERED_COUNTED_THROUGH_KEY = localKey('dayLedgerTieredThrough');
/**
 * Events read per batch while counting newly tiered events. Each batch is counted in one turn
 * of the event loop, as an exclusive step of the writer: at 5,000 events a turn took 100 ms and
 * more under a soak's load; 1,000 keep it to a few tens of milliseconds.
 */
const TIERED_COUNT_BATCH_EVENTS = 1_000;

/** The LevelDB tuning every store opens with (exported so benchmarks compare like with like). */
export const LEVELDB_TUNING = { writeBufferSize: WRITE_BUFFER_BYTES, blockSize: BLOCK_BYTES, cacheSize: BLOCK_CACHE_BYTES } as const;

export type StoreStatus = 'opening' | 'open' | 'closing' | 'closed';

/** Values read beyond the expected page by a time scan with no other predicate (equal event times at the page's end). */
const TIME_SCAN_SLACK = 8;

/** Whether a filter tests anything but event time (and the cursor, which is a time bound). */
function filterBeyondTime(filter: Omit<SearchFilter, 'limit'>): boolean {
  return filter.user !== undefined || filter.engine !== undefined || filter.table !== undefined || filter.decision !== undefined || filter.q !== undefined || filter.action !== 'all';
}

/** The stored JSON text each event `search` yielded was parsed from. */
const storedJson = new WeakMap<StoredEvent, string>();

/**
 * The JSON text the store holds for an event `search` yielded (the event object itself, not a
 * copy), or undefined for any other object. Lets a response reuse the text instead of
 * serialising the event again (see storedToOutputJson).
 */
export function storedJsonOf(event: object): string | undefined {
  return event instanceof StoredEventText ? event.json : storedJson.get(event as StoredEvent);
}

/**
 * The API's JSON for an event `search` yielded, cut from the text the store holds; undefined
 * for any other object or when it cannot be cut (the caller serialises the event then).
 */
export function storedOutputJsonOf(event: object): string | undefined {
  if (event instanceof StoredEventText) return event.outputJson();
  const stored = storedJson.get(event as StoredEvent);
  return stored === undefined ? undefined : storedToOutputJson(stored);
}

export interface AuditStoreOptions {
  /** Directory of the LevelDB database; created when missing. */
  location: string;
  /** Clock for ingestTs; injected so tests can move it. */
  now?: () => number;
  /**
   * A clock that never steps (default `performance.now()`): how ingestTs goes on while `now` is
   * behind the log's last ingestTs (IngestClock). Injected with `now` by the simulator.
   */
  monotonicNow?: () => number;
  /**
   * Told once when LevelDB fails a write: the store then refuses every write until it is
   * reopened (latchWriteFaults). A node stops taking events then, and says why.
   */
  onWriteFault?: (fault: Error) => void;
  /** Most events written in one synced batch (group commit). */
  groupEventsMax?: number;
  /**
   * Asked right before every append batch: the term to stamp, or an AUDIT_NOT_LEADER error
   * when this node may not order events now. Default: always term 0 (a single node).
   */
  sequencer?: Sequencer;
  /**
   * Bytes of the newest appended entries to keep for answering pulls and the sweep's reads
   * (LogTail). Default 0, none kept.
   */
  logTailBytes?: number;
  /**
   * Keep the record chain (docs/integrity.md): the leader adds chain fields to each event, a
   * standby verifies them. Default true; off only to measure what it costs.
   */
  chain?: boolean;
  /** LevelDB's block cache in bytes (default BLOCK_CACHE_BYTES). */
  cacheBytes?: number;
  /**
   * How long after its event's time the id of a tiered event retention deleted is kept, so a
   * re-send under it is judged against the tier's copy (pruned-ids.ts; default 30 days).
   */
  prunedIdsKeepMs?: number;
  /** Memory the kept ids' Bloom filter may take (default 512 MiB); past it every client-chosen id of an append is read. */
  prunedIdsFilterBytesMax?: number;
  /**
   * Runs after a retention batch has read what it deletes and before it waits for the writer:
   * a seam for tests to put another write (a replicated apply) exactly there. Unset in a node.
   */
  beforePruneWrite?: () => Promise<void>;
}

/** The most entries one cut of the log moves to the outbox (read into memory at once). */
export const DIVERT_ENTRIES_MAX = 1_000_000;

/** What a truncation moved to the outbox: how many entries, and how many of each term. */
export interface DivertResult {
  moved: number;
  terms: Record<number, number>;
  /**
   * Set when the cut went back further than asked: the last seq kept. The chain hash at the
   * seq asked to keep was not known here (retention deleted that entry inside a range whose
   * end lies past it), so the log was cut back to the last seq whose chain hash it knows.
   */
  keptThrough?: number;
}

/** The record an adoption orders after the tier's entries, in the same write (see AuditStore.adoptSuffix). */
export interface AdoptionClosing {
  /** Its term: above every term the cluster handed out, so this log is the most up to date. */
  term: number;
  /** The leader's clock; its ingestTs is never below the log's highest. */
  nowMs: number;
  /** The event, given how many of the log's own entries the cut moved to the outbox. */
  event: (moved: number) => EncodedEvent;
}

export interface PruneResult {
  deleted: number;
  batches: number;
}

export interface OutboxEntry {
  key: string;
  /** The received event (an AuditEvent) as JSON text. */
  json: string;
  /**
   * This process assigned the event's eventId when it received it, and no earlier read
   * returned the entry: no node can hold the event yet (UnsentNewIds says why that matters).
   */
  unsentNewId: boolean;
  /** This node set the event's time on receipt (EncodedEvent.timeAssigned), as far as this process knows. */
  timeAssigned: boolean;
}

/**
 * The local LevelDB store of one node: events (by event time, seq and id), the outbox,
 * replicated metadata and this node's own metadata. `open()` → use → `close()`, which waits
 * for queued writes and closes every iterator (LevelDB closes them with the database).
 */
export class AuditStore {
  readonly location: string;

  /** The write LevelDB failed, after which this store refuses every write (latchWriteFaults); undefined while none has. */
  get writeFault(): Error | undefined {
    return this.#writeFaults.fault();
  }
  readonly #db: Level<string, string>;
  readonly #options: AuditStoreOptions;
  #writer: EventWriter | undefined;
  #ingestClock: IngestClock | undefined;
  /** Writes the secondary index keys in every batch that writes or deletes events. */
  #index: IndexWriter | undefined;
  /** Keeps the free-text sketches of the blocks being written. */
  #text: TextSketchWriter | undefined;
  #status: StoreStatus = 'opening';
  #closed: Promise<void> | undefined;
  #outboxNext = 1;
  /**
   * No outbox entry is numbered below this. Reads start here rather than at the start of the
   * outbox's key range, where every forwarded entry leaves a deletion marker until compaction:
   * an iterator from the range's start stepped over all of them on every read.
   */
  #outboxHead = 1;
  #outboxCount = 0;
  readonly #unsentNewIds = new UnsentNewIds();
  readonly #timeAssigned = new TimeAssignedEntries();
  /** Table names an erasure took out of events (IndexUpdate.erasedTables), to drop from the dictionary once none names them. */
  readonly #erasedTables = new Set<string>();
  /** Every eventId an erasure named, with the fields erased (erased-ids.ts): its values never come back. */
  #erasedIds!: ErasedIds;
  /** Every eventId whose tiered event retention deleted here, with its time (pruned-ids.ts): a re-send is judged against the tier's copy. */
  #prunedIds!: PrunedIds;
  /** The newest entries this node appended, for pulls (LogTail says why). */
  readonly #tail: LogTail;
  #metaVersion = 0;
  /**
   * Every replicated-metadata value as stored (its JSON), read once at open and kept with every
   * write (putMeta and appends carrying meta are the only writers): a read of the watermark or
   * the settings is a map lookup, not a LevelDB round trip through the busy thread pool.
   */
  readonly #metaText = new Map<string, string>();
  readonly #logListeners = new Set<() => void>();
  readonly #cutListeners = new Set<(lastSeq: number) => void>();
  /** How many times the log was cut (see cutCount). */
  #cuts = 0;
  /**
   * Every seq above this, up to the log's last seq, is in the log: seqs are assigned one by
   * one, and only a prune (or a replicated log the leader had pruned) leaves holes. The highest
   * seq ever pruned or skipped; kept in local metadata with the deletes that raise it.
   */
  #gapSeqMax = 0;
  /**
   * Where this log ended when it last took a sender's entries past seqs they skip with no chain
   * hash linking them to it (see unlinkedThrough).
   */
  #unlinkedThrough = 0;
  /**
   * While this log owes itself its leader's erased ids (it skipped seqs, erased-ids-sync.ts):
   * the id the next page follows ('' for the first); undefined when none are owed.
   */
  #erasedIdsOwed: ErasedIdsOwed | undefined;
  /**
   * The highest throughSeq this log took a complete set of erased ids for, with the term of the
   * entry there (ERASED_IDS_COMPLETE_KEY): it holds for a later skip only in that history.
   */
  #erasedIdsComplete: ErasedIdsComplete | undefined;
  /**
   * The newest event time retention ever deleted from this log (undefined: it never deleted
   * anything): only an event timed at or before it can be a re-send of one it deleted.
   */
  #prunedTimeMax: number | undefined;
  /** Where an append looks for copies of such re-sent events (setTieredCopyLookup). */
  #tieredCopies: TieredCopyLookup | undefined;
  /** EventIds lately found held by the tier (noteHeldByTier), oldest first. */
  readonly #heldByTier = new Set<string>();
  /** Bumped by every batch that deletes log entries: a counted range is stale after it. */
  #deleteVersion = 0;
  /** The last count of entries in (afterSeq, gapSeqMax], narrowed as afterSeq grows. */
  #gapCount: { afterSeq: number; gapSeqMax: number; deleteVersion: number; count: number } | undefined;
  #runs = new TermRuns([]);
  #chain: RecordChain | undefined;
  /** Seqs retention deleted, with the chain hash at each range's end (verify goes on from it). */
  #pruned = new PrunedRanges([]);
  /**
   * Blocks an erasure marked stale (staleSketchKey) whose sketches are not rebuilt yet: each
   * removed in the turn that rebuilds it. A free-text search reads these blocks whatever their
   * sketches say (the old sketch lacks the marker's trigrams). Marks left by a crash are
   * rebuilt at open, before any search.
   */
  readonly #staleSketches = new Set<number>();
  /** The rebuild running now, if any (one at a time; it reads the marks until none is left). */
  #rebuildingSketches: Promise<void> | undefined;
  /**
   * The seq of the newest checkpoint record retention deleted: its entry in the checkpoint
   * index is kept (the others' are deleted with their records), so the log's newest checkpoint
   * is always known, however much retention deleted, and the next one continues its chain.
   */
  #prunedCheckpointSeq: number | undefined;
  /** Per source, the sourceSeqs received (the completeness ledger). */
  #ledger = new SourceLedger();
  /** Per day and source, the events received, pruned and tiered (the ledger's counts). */
  readonly #days: DayLedger;
  /** Every received event with a seq up to this is counted as tiered in #days (or was cut since). */
  #tieredCountedThrough = 0;

  readonly #writeFaults: { fault(): Error | undefined };

  private constructor(options: AuditStoreOptions) {
    this.location = options.location;
    this.#options = options;
    this.#tail = new LogTail(options.logTailBytes ?? 0);
    this.#db = new Level<string, string>(options.location, { keyEncoding: 'utf8', valueEncoding: 'utf8', ...LEVELDB_TUNING, cacheSize: options.cacheBytes ?? BLOCK_CACHE_BYTES });
    this.#writeFaults = latchWriteFaults(this.#db, (fault) => options.onWriteFault?.(fault));
    // Read from LevelDB as needed: nothing of it is loaded at open.
    this.#days = new DayLedger(this.#db);
  }

  /** Opens (creating if needed) the store at `options.location`. */
  static async open(options: AuditStoreOptions): Promise<AuditStore> {
    await mkdir(options.location, { recursive: true });
    const store = new AuditStore(options);
    await store.#db.open();
    try {
      store.#runs = await store.#readTermRuns();
      const index = await IndexWriter.load(store.#db);
      const text = new TextSketchWriter(store.#db);
      await backfillIndexes(store.#db, index, text);
      await backfillErasureIndex(store.#db);
      store.#erasedIds = await ErasedIds.open(store.#db);
      await backfillErasedIds(store.#db, store.#erasedIds);
      await applyStoredErasures(store.#db, index, { erasedIds: store.#erasedIds, erasedTables: store.#erasedTables, erasedBlocks: store.#staleSketches });
      store.#index = index;
      store.#text = text;
      const position = await store.#readPosition();
      // Unreadable (a damaged value): owed through the log's end, which the leader's line holds.
      store.#erasedIdsOwed = erasedIdsOwedOf(await store.#db.get(ERASED_IDS_SYNC_KEY), position.lastSeq);
      store.#erasedIdsComplete = erasedIdsCompleteOf(await store.#db.get(ERASED_IDS_COMPLETE_KEY));
      store.#chain = new RecordChain(options.chain ?? true, await store.#readChainHead(position.lastSeq));
      store.#pruned = new PrunedRanges(await readPrunedRanges(store.#db));
      const prunedCheckpoint = await store.#db.get(PRUNED_CHECKPOINT_KEY);
      store.#prunedCheckpointSeq = prunedCheckpoint === undefined ? undefined : Number(prunedCheckpoint);
      const prunedTimeMax = await store.#db.get(PRUNED_TIME_MAX_KEY);
      store.#prunedTimeMax = prunedTimeMax === undefined ? undefined : Number(prunedTimeMax);
      store.#ledger = await SourceLedger.load(store.#db);
      for (const [key, value] of await store.#db.iterator({ gte: PREFIX.meta, lt: prefixEnd(PREFIX.meta) }).all()) store.#metaText.set(key.slice(PREFIX.meta.length), value);
      await store.#boundPrunedTimes(position, options.now ?? Date.now);
      await backfillLedger(store.#db, store.#ledger, store.#days);
      store.#tieredCountedThrough = Number((await store.#db.get(TIERED_COUNTED_THROUGH_KEY)) ?? 0);
      store.#ingestClock = new IngestClock(options.now ?? Date.now, options.monotonicNow ?? (() => performance.now()), position.lastIngestTs);
      store.#writer = new EventWriter(store.#db, position, {
        index,
        text,
        clock: store.#ingestClock,
        groupEventsMax: options.groupEventsMax ?? 20_000,
        sequencer: options.sequencer ?? (() => 0),
        tail: store.#tail,
        runs: store.#runs,
        chain: store.#chain,
        ledger: store.#ledger,
        days: store.#days,
        indexIntegrity: async (batch, entries, newTables) => {
          const erasedIds = store.#erasedIds.begin();
          const rewrote = await addIntegrityPuts(store.#db, batch, entries, { index, newTables, erasedTables: store.#erasedTables, erasedBlocks: store.#staleSketches, erasedIds });
          return { rewrote, commit: () => erasedIds.commit() };
        },
      });
      const outbox = await countOutbox(store.#db);
      store.#outboxCount = outbox.count;
      store.#outboxNext = outbox.lastKey === undefined ? 1 : parseOutboxNumber(outbox.lastKey) + 1;
      store.#outboxHead = outbox.firstKey === undefined ? store.#outboxNext : parseOutboxNumber(outbox.firstKey);
      const gapSeqMax = await store.#db.get(localKey(GAP_SEQ_MAX));
      if (gapSeqMax === undefined) {
        // A log written before holes were recorded: assume any of it may have them.
        store.#gapSeqMax = store.#writer.position.lastSeq;
        await store.#db.put(localKey(GAP_SEQ_MAX), String(store.#gapSeqMax), { sync: true });
      } else store.#gapSeqMax = Number(gapSeqMax);
      const unlinkedThrough = await store.#db.get(localKey(UNLINKED_THROUGH));
      if (unlinkedThrough === undefined) {
        // Kept only since this version: any seq skipped or pruned before may hide such a join.
        store.#unlinkedThrough = store.#gapSeqMax;
        await store.#db.put(localKey(UNLINKED_THROUGH), String(store.#unlinkedThrough), { sync: true });
      } else store.#unlinkedThrough = Number(unlinkedThrough);
      store.#status = 'open';
      // An erasure written before a crash may have left sketches holding its values' trigrams.
      await store.#rebuildStaleSketches();
      // Filled in the background: until it is, every id counts as one retention may have deleted.
      store.#prunedIds = PrunedIds.open(store.#db, {
        keepMs: options.prunedIdsKeepMs ?? PRUNED_IDS_KEEP_MS_DEFAULT,
        // Not past the log's newest ingest time: a node started once with its clock a year
        // ahead would otherwise delete every kept id for good at its first sweep (review); a
        // clock ahead while ingesting moves both, and the daily interval leaves time to mend it.
        now: () => {
          const wallMs = (options.now ?? Date.now)();
          const lastIngestTs = store.position.lastIngestTs;
          return lastIngestTs > 0 ? Math.min(wallMs, lastIngestTs) : wallMs;
        },
        inWriterTurn: (run) => store.#openWriter().exclusive(run),
        ...(options.prunedIdsFilterBytesMax === undefined ? {} : { filterBytesMax: options.prunedIdsFilterBytesMax }),
      });
    } catch (err) {
      // A store that cannot be read to the end is closed, not left holding LevelDB's lock: the
      // caller (a test, a restart in the same process) can open it again once mended.
      await store.#db.close().catch(() => undefined);
      throw err;
    }
    return store;
  }

  get status(): StoreStatus {
    return this.#status;
  }

  /** Where the log ends: last seq (0 when empty), its term, and the highest ingestTs assigned. */
  get position(): WriterPosition {
    return this.#openWriter().position;
  }

  /**
   * Makes #prunedTimeMax bound what retention deleted before versions recorded it. Versions
   * before 2026-12-04 deleted tiered events without keeping their ids or the newest time they
   * deleted, so a re-send of one of those was stored and tiered a second time (an upgrade
   * review found five such duplicates in the tier). A store opened for the first time by this
   * version, with entries in its log, takes as that bound the moment it is opened (or its
   * newest ingest time, if later): every event retention deleted was older than its prune's
   * cutoff, which was never after that. What it costs is a tier lookup for a re-send timed
   * before the upgrade and not in the log; ingest after it is timed later and looks nothing up.
   * A new store (no entries, no replicated metadata) needs no bound and gets none; one with
   * metadata and no entries is one retention emptied under a version that did not record where
   * its log ended.
   */
  async #boundPrunedTimes(position: WriterPosition, now: () => number): Promise<void> {
    if ((await this.#db.get(PRUNED_TIME_MAX_COMPLETE_KEY)) !== undefined) return;
    const batch = this.#db.batch();
    if (position.lastSeq > 0 || this.#metaText.size > 0) {
      this.#prunedTimeMax = Math.max(this.#prunedTimeMax ?? Number.NEGATIVE_INFINITY, now(), position.lastIngestTs);
      batch.put(PRUNED_TIME_MAX_KEY, String(this.#prunedTimeMax));
    }
    batch.put(PRUNED_TIME_MAX_COMPLETE_KEY, '1');
    await batch.write({ sync: true });
  }

  /**
   * Where the log ends: the recorded log end (it outlives a deleted or cut last entry), or for
   * a store written before it was recorded, the last entry. Its term comes from the term runs.
   */
  async #readPosition(): Promise<WriterPosition> {
    const last = await this.#db.keys({ gte: PREFIX.seq, lt: prefixEnd(PREFIX.seq), reverse: true, limit: 1 }).all();
    const key = last[0];
    const highestIngestTs = Number((await this.#db.get(localKey('highestIngestTs'))) ?? '0');
    const end = await this.#db.get(LOG_END_KEY);
    const recorded = end === undefined ? { seq: 0, ingestTs: 0 } : (JSON.parse(end) as { seq: number; ingestTs: number });
    const event = key === undefined ? undefined : await this.getBySeq(parseSeqFromSeqKey(key));
    const lastSeq = Math.max(recorded.seq, event?.seq ?? 0);
    return { lastSeq, lastTerm: this.#runs.termAt(lastSeq), lastIngestTs: Math.max(event?.ingestTs ?? 0, recorded.ingestTs, highestIngestTs) };
  }

  /** The chain head: the one kept with the last change to the log, else the last entry's. */
  async #readChainHead(lastSeq: number): Promise<ChainHead> {
    const kept = await this.#db.get(CHAIN_HEAD_KEY);
    if (kept !== undefined) {
      const head = JSON.parse(kept) as { seq: number; hash: string };
      if (head.seq === lastSeq) return { hash: head.hash, started: true };
    }
    return headOf(lastSeq === 0 ? undefined : await this.getBySeq(lastSeq));
  }

  /**
   * The term runs on disk. A store written before they were kept gets them from one scan of
   * its log (written back, so this happens once).
   */
  async #readTermRuns(): Promise<TermRuns> {
    const entries = await this.#db.iterator({ gte: PREFIX.termRun, lt: prefixEnd(PREFIX.termRun) }).all();
    if (entries.length > 0) return new TermRuns(entries.map(([key, value]) => parseTermRun(key, value)));
    const runs: TermRun[] = [];
    for (let after = 0; ; ) {
      const page = await this.#readSeqRange(after, 10_000);
      if (page.length === 0) break;
      for (const event of page) {
        const current = runs[runs.length - 1];
        // Who ordered these is not known: counted as this node's own (the cautious choice for ack=replicated).
        if (current === undefined || current.term !== event.term) runs.push({ firstSeq: event.seq, term: event.term, received: false });
      }
      after = (page[page.length - 1] as StoredEvent).seq;
    }
    if (runs.length > 0) await this.#db.batch(runs.map((run) => ({ type: 'put' as const, key: termRunKey(run.firstSeq), value: termRunValue(run) })), { sync: true });
    return new TermRuns(runs);
  }

  #openText(): TextSketchWriter {
    this.#openWriter();
    return this.#text as TextSketchWriter;
  }

  #openIndex(): IndexWriter {
    this.#openWriter();
    return this.#index as IndexWriter;
  }

  #openWriter(): EventWriter {
    if (this.#status !== 'open' || this.#writer === undefined) {
      throw new AuditError(AuditErrorCode.STORE_NOT_OPEN, `the audit store at ${this.location} is ${this.#status}`, { retryable: true });
    }
    return this.#writer;
  }

  /**
   * Orders and stores events as the leader: assigns seq, term and ingestTs, skips ids already
   * stored, and resolves only once the batch is synced to disk.
   */
  async append(events: readonly AuditEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    return this.appendEncoded(events.map(encodeEvent), options);
  }

  /** As append, for events serialised where they were validated (the ingest parse workers). */
  async appendEncoded(events: readonly EncodedEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    const writer = this.#openWriter();
    // Re-sent after retention deleted them here, and held by the tier: repeats, never written.
    const lookup = this.#tieredCopies;
    let tiered: ReadonlyMap<string, string>;
    let erasedElsewhere: ReadonlySet<string>;
    let written: WrittenAppend;
    let rounds = 0;
    for (;;) {
      // Which events are looked for in the tier depends on what the log holds now: an event it
      // holds is left to the writer's de-duplication. A prune between this and the write (while
      // the tier is read, or queued before the append) may delete such an event, which the
      // writer would then store a second time. So the writer, once it knows which events the log
      // lacks, writes the append only if none of those was left out of the lookup while a prune
      // since could have deleted it (timed at or before the newest time retention deleted, or
      // under an id a prune since kept); otherwise it is chosen again, and that event is then
      // looked for in the tier. Each round moves such events into the lookup, so the rounds end;
      // ordinary ingest, timed after anything retention deletes and under ids no prune kept, is
      // never chosen again. An event that would bring erased values back is looked for at its
      // time, and one held neither here nor by the tier is not written either (resendCandidates).
      const deletes = this.#deleteVersion;
      const erasedIds = await this.#erasedIds.view(events.map((event) => event.eventId));
      // The ids among them retention deleted here, with the deleted events' times: read only for
      // ids the filter does not rule out (none, for ordinary ingest once it is filled), and only
      // where a tier can be asked.
      const freshIds = trustedFreshIds(options);
      const prunedTimes = lookup === undefined ? NO_PRUNED_TIMES : await this.#prunedIds.timesOf(events.flatMap((event) => (freshIds?.has(event.eventId) === true ? [] : [event.eventId])));
      const candidates = resendCandidates(events, freshIds, lookup === undefined ? undefined : this.#prunedTimeMax, erasedIds, prunedTimes);
      ({ copies: tiered, erasedElsewhere } = candidates === undefined ? NONE_FOUND : await tieredCopiesOf(this.#db, candidates, lookup, options.lookupSender));
      // A prune since may have deleted an event the log held here: one timed at or before the
      // newest time deleted, or one whose id a prune remembered (in the filter from the prune's
      // commit on, before the version moves: also while the filter is being filled), at any time.
      const deletedSince = (event: EncodedEvent) =>
        this.#deleteVersion !== deletes && lookup !== undefined && (event.timestamp <= (this.#prunedTimeMax ?? Number.NEGATIVE_INFINITY) || this.#prunedIds.mayHaveBeenAdded(event.eventId));
      // An erasure committed since the view was read that may name an absent event (not one of
      // other events), or one earlier in the same write (`erasing`), would bring its values
      // back: chosen again with a new view, the event is then judged as erased.
      const unchanged = (absent: readonly EncodedEvent[], erasing: ReadonlyMap<string, readonly string[]>) =>
        this.#erasedIds.unchangedFor(erasedIds, absent) && absent.every((event) => !erasedIds.bringsBack(event, erasing) && (candidates?.times.has(event.eventId) === true || !deletedSince(event)));
      const toWrite = tiered.size === 0 && erasedElsewhere.size === 0 ? events : events.filter((event) => !tiered.has(event.eventId) && !erasedElsewhere.has(event.eventId));
      written = await writer.append(toWrite, { ...options, unchanged });
      if (written.stale !== true) break;
      // Each round moves what changed into the choice; rounds beyond this mean the choice and
      // the writer disagree about an event: an error to report, not a loop to spin.
      if (++rounds === APPEND_ROUNDS_MAX) {
        throw new AuditError(AuditErrorCode.STORE_WRITE_FAILED, `an append was chosen again ${APPEND_ROUNDS_MAX} times (the log kept changing under it); nothing of it was stored; safe to retry with the same eventIds`, { retryable: true });
      }
    }
    if (options.meta?.length) {
      for (const meta of options.meta) this.#metaText.set(meta.name, JSON.stringify(meta.value));
      this.#metaVersion++;
    }
    if (written.stored.length > 0) this.#logGrew();
    if (this.#erasedTables.size > 0) await this.#openWriter().exclusive(({ db }) => this.#dropUnusedTableNames(db));
    // The erasure's own request answers once its values are gone from the sketches too; other
    // appends queued meanwhile do not wait for that rebuild (it may take many writer turns).
    if (written.rewrote === true) await this.#rebuildStaleSketches();
    const repeats = written.repeated === undefined ? { duplicates: 0, conflicts: [] } : await this.#sortRepeated(written.repeated);
    if (erasedElsewhere.size > 0) {
      // Re-sends of erased records whose copies are gone from here and the tier (or the tier
      // could not be read): not stored again, whatever they hold; counted as repeats, received.
      repeats.duplicates += events.filter((event) => erasedElsewhere.has(event.eventId)).length;
      await this.recordReceivedNotStored(events.filter((event) => erasedElsewhere.has(event.eventId)));
    }
    if (tiered.size === 0) return { stored: written.stored, ...repeats, ...(erasedElsewhere.size > 0 ? { heldByTier: this.#noteNotStoredAgain([...erasedElsewhere]) } : {}) };
    const fromTier = judgeRepeats(
      events.filter((event) => tiered.has(event.eventId)),
      tiered,
      undefined,
    );
    // Conflicts in the order their events were given, as the writer's are.
    const order = new Map<string, number>();
    events.forEach((event, i) => order.set(event.eventId, order.get(event.eventId) ?? i));
    const conflicts = [...repeats.conflicts, ...fromTier.conflicts].sort((a, b) => (order.get(a.eventId) ?? 0) - (order.get(b.eventId) ?? 0));
    const heldByTier = this.#noteNotStoredAgain([...tiered.keys(), ...erasedElsewhere]);
    // The retries' sourceSeqs were received (a log that skipped the first copies, as a standby
    // catching up across what its leader deleted does, lacks them): as for a sampled-out read.
    const refused = new Set(fromTier.conflicts.map((conflict) => conflict.eventId));
    await this.recordReceivedNotStored(events.filter((event) => tiered.has(event.eventId) && !refused.has(event.eventId)));
    return { stored: written.stored, duplicates: repeats.duplicates + fromTier.duplicates, conflicts, heldByTier };
  }

  /**
   * Ids an append did not store because the tier holds them or an erasure named them: nothing
   * more will be stored for them, so `ack=replicated` must not wait for them (noteHeldByTier).
   */
  #noteNotStoredAgain(eventIds: string[]): string[] {
    this.noteHeldByTier(eventIds);
    return eventIds;
  }

  /**
   * Remembers eventIds the tier holds although this log does not (an append judged them against
   * a tiered copy, here or on the leader this node forwarded them to), so `ack=replicated`
   * counts them confirmed (the tier holds them) instead of waiting for the log to replicate
   * what it never will. The newest TIER_HELD_REMEMBERED_MAX are kept: long enough for any wait.
   */
  noteHeldByTier(eventIds: readonly string[]): void {
    for (const eventId of eventIds) {
      this.#heldByTier.delete(eventId);
      this.#heldByTier.add(eventId);
    }
    for (const eventId of this.#heldByTier) {
      if (this.#heldByTier.size <= TIER_HELD_REMEMBERED_MAX) break;
      this.#heldByTier.delete(eventId);
    }
  }

  /** Whether an append here or on the leader found `eventId` held by the tier lately (noteHeldByTier). */
  heldByTier(eventId: string): boolean {
    return this.#heldByTier.has(eventId);
  }

  /**
   * Where appends look for the copies a tier holds of events re-sent after this log's retention
   * deleted them (resent-after-retention.ts); undefined: nowhere (no tier). A lookup that throws
   * fails the append, with nothing of it stored.
   */
  setTieredCopyLookup(lookup: TieredCopyLookup | undefined): void {
    this.#tieredCopies = lookup;
  }

  /**
   * The ingestTs an append stamped now would get (nothing is stamped): the wall clock, or, while
   * that is behind the log, the log's last ingestTs plus the time since. The tier sweep measures
   * its settle window against it, so a clock stepped back does not hold tiering back.
   */
  ingestNow(): number {
    return (this.#ingestClock as IngestClock).peek(this.#openWriter().position.lastIngestTs);
  }

  /** The newest event time retention deleted from this log, or undefined when it deleted nothing. */
  get prunedTimeMax(): number | undefined {
    return this.#prunedTimeMax;
  }

  /** How far filling the filter of the ids retention deleted has got since open (PrunedIds). */
  get prunedIdsLoad(): PrunedIdsLoad {
    return this.#prunedIds.load;
  }

  /** What the kept ids of deleted events take, and whether their filter is still being filled. */
  get prunedIdsFigures(): PrunedIdsFigures {
    return this.#prunedIds.figures;
  }

  /**
   * Deletes the kept ids of deleted events past `prunedIdsKeepMs` and builds their filter again
   * now (PrunedIds.sweep; it runs once a day on its own): resolves with where the filter stands.
   */
  sweepPrunedIds(): Promise<PrunedIdsLoad> {
    return this.#prunedIds.sweep();
  }

  /**
   * Tells the events an append did not store because their eventId was taken into retries
   * (the same content hash as the event stored under the id) and conflicts (another content):
   * after the write, so the writer never waits for it, and only for those events, so an append
   * without repeated ids pays nothing. The event stored under each id is read once; one that is
   * gone meanwhile (retention) cannot be compared and counts as a retry, as it did at the write.
   */
  async #sortRepeated(repeated: readonly EncodedEvent[]): Promise<Pick<AppendResult, 'duplicates' | 'conflicts'>> {
    return judgeRepeats(repeated, await this.#storedJsonOf(new Set(repeated.map((event) => event.eventId))), undefined);
  }

  /**
   * What an append of `events` would find on a node that does not order them (a standby, whose
   * outbox the leader orders later): which repeat an event this store's log holds, or one
   * earlier in `events`, with the same content (duplicates) or another (conflicts). Give only
   * events whose ids the client chose: an id this node just made cannot be stored already.
   */
  async knownRepeats(events: readonly EncodedEvent[]): Promise<Pick<AppendResult, 'duplicates' | 'conflicts'>> {
    if (events.length === 0) return { duplicates: 0, conflicts: [] };
    const stored = await this.#storedJsonOf(new Set(events.map((event) => event.eventId)));
    const firsts = new Map<string, EncodedEvent>();
    const repeated: EncodedEvent[] = [];
    for (const event of events) {
      if (stored.has(event.eventId) || firsts.has(event.eventId)) repeated.push(event);
      else firsts.set(event.eventId, event);
    }
    return repeated.length === 0 ? { duplicates: 0, conflicts: [] } : judgeRepeats(repeated, stored, firsts);
  }

  /** The stored JSON of those of `eventIds` this log holds, by eventId. */
  async #storedJsonOf(eventIds: ReadonlySet<string>): Promise<Map<string, string>> {
    const ids = [...eventIds];
    const places = await this.#db.getMany(ids.map(idKey));
    const found: string[] = [];
    const keys: string[] = [];
    places.forEach((place, i) => {
      if (place === undefined) return;
      found.push(ids[i] as string);
      keys.push(PREFIX.time + place);
    });
    const values = keys.length === 0 ? [] : await this.#db.getMany(keys);
    const json = new Map<string, string>();
    values.forEach((value, i) => {
      if (value !== undefined) json.set(found[i] as string, value);
    });
    return json;
  }

  /** Calls `listener` whenever the log gains entries (append or replication). Returns an unsubscribe. */
  onLogGrowth(listener: () => void): () => void {
    this.#logListeners.add(listener);
    return () => this.#logListeners.delete(listener);
  }

  /**
   * Calls `listener` with where the log ends whenever it is cut (a diverged suffix moved to the
   * outbox): whatever counted entries past that seq counted entries that are gone. Returns an unsubscribe.
   */
  onLogCut(listener: (lastSeq: number) => void): () => void {
    this.#cutListeners.add(listener);
    return () => this.#cutListeners.delete(listener);
  }

  /**
   * How many times this log was cut since the store opened: a writer that read the chain head
   * before an append compares it right before the append is written (a checkpoint must not
   * cover a head a cut removed meanwhile).
   */
  get cutCount(): number {
    return this.#cuts;
  }

  /**
   * Where this log ended when it last applied a sender's entries that nothing linked to it: the
   * sender matched this log's end by term alone (SkippedByRetention.unproven: this log ended
   * inside a range the sender's retention deleted, where the sender knew no hash to compare), or
   * the entries skip seqs with no chain hash sent for the skipped range, or this log does not
   * keep the chain. A match of this log's end further on then proves nothing about the entries at
   * or below this seq: with a term number handed out twice they may be another history's
   * (review). 0 when no such join happened; lowered only by a cut below it, to the cut's end.
   */
  get unlinkedThrough(): number {
    return this.#unlinkedThrough;
  }

  #logGrew(): void {
    for (const listener of this.#logListeners) listener();
  }

  /** Increases whenever replicated metadata changes on this node (cheap change detection). */
  get metaVersion(): number {
    return this.#metaVersion;
  }

  /** The term of the entry at `seq` (0 for seq 0), also for an entry retention deleted; seq must be within the log. */
  termAt(seq: number): number {
    this.#openWriter();
    return this.#runs.termAt(seq);
  }

  /** The run holding `seq`: its term, and whether its entries came from another node. */
  runAt(seq: number): TermRun | undefined {
    this.#openWriter();
    return this.#runs.runAt(seq);
  }

  /** This log's term boundaries after `afterSeq` (all of them by default), for peers. */
  termStarts(afterSeq = 0): TermStart[] {
    this.#openWriter();
    return this.#runs.starts(afterSeq);
  }

  /**
   * The chain hash of the entry at `seq`, which commits to every entry up to it: two logs with
   * the same chain hash at a seq hold the same entries up to it, whatever their terms say.
   * Undefined when it is not known here (no chain, an entry without chain fields, or one
   * retention deleted), so the caller falls back to comparing terms.
   */
  async chainHashAt(seq: number): Promise<string | undefined> {
    const position = this.#openWriter().position;
    const chain = this.#chain as RecordChain;
    if (!chain.enabled || seq <= 0 || seq > position.lastSeq) return undefined;
    // The head and the position move together (in one synchronous step after each write).
    if (seq === position.lastSeq) return chain.head.started ? chain.head.hash : undefined;
    return (await this.getBySeq(seq))?.chainHash;
  }

  /**
   * Applies entries ordered by another node, as they are (seq, term, ingestTs kept), with that
   * node's term boundaries among them (`starts`, so runs start where they start there, even
   * inside a gap retention made). Entries at or below the local last seq are skipped, so a
   * re-delivered batch is harmless; seqs out of order are refused (nothing is written), gaps
   * the sender pruned are not.
   *
   * What the sender's retention deleted where the entries skip seqs (SkippedByRetention,
   * from skippedByRetention), kept in the same write:
   * - `ranges`: its deleted ranges, with the chain hash at each one's end. One that fills a gap
   *   of the entries up to the entry after it (which must then link to that hash: the chain is
   *   checked across the gap, AUDIT_INTEGRITY_MISMATCH otherwise) is added to this log's ranges
   *   deleted by retention, so a verifier tells those seqs from missing ones; any other is ignored.
   * - `checkpoint`: its newest checkpoint whose record its retention deleted, when the entries
   *   skip that record. Kept as this log's newest deleted checkpoint (as retention keeps one), so
   *   the next checkpoint signed here continues the chain; checked first
   *   (verifyCarriedCheckpoint: AUDIT_INTEGRITY_MISMATCH, nothing stored). Ignored unless its
   *   seq lies in a gap of these entries and after every checkpoint this log holds.
   */
  async applyReplicated(entries: readonly Uint8Array[], starts: readonly TermStart[] = [], skipped: SkippedByRetention = {}): Promise<number> {
    const applied = await this.#openWriter().exclusive((context) => this.#applyWithin(context, entries, starts, true, skipped));
    if (applied > 0) this.#logGrew();
    // Not awaited: replication (and a leader waiting on this node's ack) must not wait for an
    // erasure's sketches to be rebuilt, block by block; searches meanwhile read every block
    // still marked stale (#staleSketches) as one that may hold the needle. A rebuild that
    // fails leaves its marks, and the next erasure or open starts it again.
    if (this.#staleSketches.size > 0) void this.#rebuildStaleSketches().catch(() => undefined);
    return applied;
  }

  /**
   * What this log owes itself of its leader's erased ids, because it skipped seqs (the cursor
   * of the next page and the highest seq skipped; erased-ids-sync.ts), or undefined when nothing.
   */
  get erasedIdsOwed(): ErasedIdsOwed | undefined {
    return this.#erasedIdsOwed;
  }

  /** The term of the entry at what is owed through (owedThroughTerm), undefined when nothing is owed. */
  erasedIdsOwedTerm(): number | undefined {
    const owed = this.#erasedIdsOwed;
    return owed === undefined ? undefined : owedThroughTerm(owed, this.position.lastSeq, (seq) => this.termAt(seq));
  }

  /** The highest seq through which this log took a complete set of erased ids after skipping seqs (0: never). */
  get erasedIdsCompleteThrough(): number {
    return this.#erasedIdsComplete?.seq ?? 0;
  }

  /**
   * A sender whose log ends at `lastSeq` (its entry there of term `lastTerm`) answered a matched
   * pull with no entries: its retention deleted every entry after this log's end, erasure
   * records maybe among them, and nothing will skip them here until it orders more. Its erased
   * ids are owed through there now (erased-ids-sync.ts), unless owed or taken through there
   * already. Answers whether that changed.
   */
  async owedForTail(lastSeq: number, lastTerm: number): Promise<boolean> {
    if (!Number.isSafeInteger(lastSeq) || !Number.isSafeInteger(lastTerm)) return false;
    return this.#openWriter().exclusive(async ({ db, position }) => {
      if (lastSeq <= position.lastSeq) return false;
      // Taken already through that end or past it in the same term (one leader's log there, so
      // the same history), or owed through that very end: nothing new. Any other end is another
      // tail, or another history's: owed through it now, from the first page — a lower end too,
      // since only a node holding the owed seq can give the ids, and the node that told of the
      // lower end (the one this log follows now) holds no more.
      const complete = this.#erasedIdsComplete;
      if (complete !== undefined && lastSeq <= complete.seq && complete.term === lastTerm) return false;
      const owedNow = this.#erasedIdsOwed;
      if (owedNow !== undefined && lastSeq === owedNow.throughSeq && owedThroughTerm(owedNow, position.lastSeq, (seq) => this.termAt(seq)) === lastTerm) return false;
      const owed: ErasedIdsOwed = { after: '', throughSeq: lastSeq, throughTerm: lastTerm };
      await db.put(ERASED_IDS_SYNC_KEY, JSON.stringify(owed), { sync: true });
      this.#erasedIdsOwed = owed;
      return true;
    });
  }

  /** The erased ids after `after` ('' for the first), what a node whose log skipped seqs asks for (erased-ids-sync.ts). */
  async erasedIdsPage(after: string, limit = ERASED_IDS_PAGE_MAX): Promise<ErasedIdsPage> {
    return readErasedIdsPage(this.#db, after, limit);
  }

  /**
   * Applies one page of a leader's erased ids (erased-ids-sync.ts) in one write: each id is
   * erased here, with the copies this log holds, and the cursor moves past the page. A page
   * that does not follow the cursor (a later skip started the pages again, or none are owed)
   * is not applied: answers false.
   */
  async applyErasedIdsPage(value: unknown): Promise<boolean> {
    const page = erasedIdsPageOf(value);
    if (page === undefined) return false;
    const applied = await this.#openWriter().exclusive(async ({ db }) => {
      const owed = this.#erasedIdsOwed;
      // The page must follow the cursor, and be one given for what is owed now (a page asked
      // for before a later skip raised throughSeq was checked against less).
      if (owed === undefined || owed.after !== page.after || (page.throughSeq !== undefined && page.throughSeq !== owed.throughSeq)) return false;
      const index = this.#openIndex();
      const newTables = new Set<string>();
      const erasedIds = this.#erasedIds.begin();
      const batch = db.batch();
      let rewrote: boolean;
      // Done: complete through what was owed, in the history of the entry there.
      const taken: ErasedIdsComplete = { seq: owed.throughSeq, term: owedThroughTerm(owed, this.position.lastSeq, (seq) => this.termAt(seq)) };
      // Never lowered within one term's history (a tail owed lower, then taken).
      const before = this.#erasedIdsComplete;
      const complete = !page.done ? before : before !== undefined && before.seq >= taken.seq && before.term === taken.term ? before : taken;
      try {
        rewrote = await putErasedIdsPage(db, batch, page, owed, { index, newTables, erasedTables: this.#erasedTables, erasedBlocks: this.#staleSketches, erasedIds });
        if (complete !== this.#erasedIdsComplete) batch.put(ERASED_IDS_COMPLETE_KEY, JSON.stringify(complete));
      } catch (err) {
        index.forget(newTables);
        await batch.close();
        throw err;
      }
      try {
        await batch.write({ sync: true });
      } catch (err) {
        index.forget(newTables);
        throw err;
      }
      // Before any await: nothing may read the tail's old bytes of a rewritten record.
      if (rewrote) this.#tail.clear();
      erasedIds.commit();
      this.#erasedIdsOwed = page.done ? undefined : { ...owed, after: page.ids.at(-1)?.[0] ?? page.after };
      this.#erasedIdsComplete = complete;
      await this.#dropUnusedTableNames(db);
      return true;
    });
    if (this.#staleSketches.size > 0) void this.#rebuildStaleSketches().catch(() => undefined);
    return applied;
  }

  /**
   * Deletes the dictionary key of each table name an erasure took out of events (#erasedTables)
   * that no event's index key names any more: the name is a value the erasure removes, and the
   * dictionary is kept on every copy and read back at start. Within an exclusive operation, so
   * no batch in flight names one meanwhile. A name whose check or delete fails stays (as before).
   */
  async #dropUnusedTableNames(db: ExclusiveContext['db']): Promise<void> {
    if (this.#erasedTables.size === 0) return;
    const names = [...this.#erasedTables];
    this.#erasedTables.clear();
    await this.#dropTableNamesIfUnused(db, names);
  }

  /** Deletes the dictionary keys of those `names` no index key names; within an exclusive operation. */
  async #dropTableNamesIfUnused(db: ExclusiveContext['db'], names: readonly string[]): Promise<void> {
    try {
      const unused = await tableNamesUnused(db, names);
      if (unused.length === 0) return;
      const batch = db.batch();
      for (const name of unused) batch.del(tableNameKey(name));
      await batch.write({ sync: true });
      this.#openIndex().dropped(unused);
    } catch {
      // The erasure or prune itself is written; only the names stay in the dictionary (as they did).
    }
  }

  /**
   * After a prune: the dictionary names its deleted events named that no event names any more
   * leave the dictionary, as an erasure's do — else every table name ever ingested stayed for
   * good (an ingest token could add 50 new names an event), and past the bounds the writer
   * holds in memory every `table` search read them all. Looked up first outside the writer's
   * turn: nearly every name a day's oldest events named is still named by newer ones.
   */
  async #dropPrunedTableNames(names: readonly string[]): Promise<void> {
    const maybeUnused = await tableNamesUnused(this.#db, names).catch(() => []);
    if (maybeUnused.length > 0) await this.#openWriter().exclusive(({ db }) => this.#dropTableNamesIfUnused(db, maybeUnused));
  }

  /** applyReplicated's write, within an exclusive operation. */
  async #applyWithin({ db, position, setPosition, runs }: ExclusiveContext, entries: readonly Uint8Array[], starts: readonly TermStart[], received = true, skipped: SkippedByRetention = {}): Promise<number> {
    const index = this.#openIndex();
    const chain = this.#chain as RecordChain;
    const batch = db.batch();
    let last: ReplicatedEntry | undefined;
    let count = 0;
    const newTables = new Set<string>();
    let head = chain.head;
    const integrity: IntegrityEntry[] = [];
    // The entries this batch puts, by ascending seq: an erasure among them may name one.
    const put: ReplicatedEntry[] = [];
    const erasedIds = this.#erasedIds.begin();
    const ledger = this.#ledger.begin();
    const days = this.#days.begin();
    const text = this.#openText();
    const added: TermRun[] = [];
    let current = runs.runAt(position.lastSeq);
    const startRun = (firstSeq: number, term: number) => {
      if (current !== undefined && current.term === term && current.received === received) return;
      current = { firstSeq, term, received };
      added.push(current);
      batch.put(termRunKey(firstSeq), termRunValue(current));
    };
    const pending = [...starts].sort((x, y) => x.firstSeq - y.firstSeq);
    const carried = skipped.checkpoint;
    // The sender's deleted ranges, by the seq of the entry right after each (which must link to its end).
    const rangeBefore = new Map<number, PrunedRange>();
    for (const range of skipped.ranges ?? []) {
      if (Number.isSafeInteger(range.fromSeq) && Number.isSafeInteger(range.toSeq) && range.fromSeq > position.lastSeq && range.fromSeq <= range.toSeq) rangeBefore.set(range.toSeq + 1, range);
    }
    const rangesKept: PrunedRange[] = [];
    // A carried checkpoint: whether its record's seq is among the entries, and the chain hash of the entry it covers.
    const carriedCovers = carried === undefined || !chain.enabled ? undefined : carriedCoveredSeq(carried);
    let carriedHeld = false;
    let coveredHash: string | undefined;
    const headBefore = chain.head;
    let keptCheckpointSeq: number | undefined;
    let prunedAfter: PrunedRanges | undefined;
    let prunedTimeMax: number | undefined;
    let owedAfter: ErasedIdsOwed | undefined;
    let unlinkedAfter: number | undefined;
    try {
      const firstEntry = entries[0];
      const lastEntry = entries[entries.length - 1];
      if (firstEntry !== undefined && lastEntry !== undefined) {
        await text.prepare(Math.max(readReplicatedEntry(firstEntry).seq, position.lastSeq + 1), readReplicatedEntry(lastEntry).seq);
      }
      // Each entry is read while its puts are added, so what is read from it dies before the
      // write's fsync is awaited (kept across it, 2,000 entries a batch reached the old
      // generation). Stored byte for byte as the leader stored it: never decoded or serialised again.
      let gapSeqMax = this.#gapSeqMax;
      let unlinkedThrough = this.#unlinkedThrough;
      let skippedSeqs = false;
      let sinceYield = 0;
      for (const bytes of entries) {
        // A pull brings up to 10,000 entries, each checked against the chain: in steps, so a
        // standby's reads and probes are not held up behind the whole batch (see the writer).
        if (++sinceYield === WRITER_YIELD_EVENTS) {
          sinceYield = 0;
          await yieldToEventLoop();
        }
        const entry = readReplicatedEntry(bytes);
        if (entry.seq <= position.lastSeq) continue;
        // Seqs may skip numbers the leader has pruned, but never go backwards.
        const expected = last?.seq ?? position.lastSeq;
        if (entry.seq <= expected) throw new TypeError(`replicated entries out of order: seq ${entry.seq} after ${expected}`);
        let range: PrunedRange | undefined;
        if (entry.seq > expected + 1) {
          gapSeqMax = entry.seq - 1;
          skippedSeqs = true;
          // Skipped here: what the sender deleted counts as deleted here too.
          if (skipped.timeMax !== undefined && Number.isSafeInteger(skipped.timeMax) && skipped.timeMax > (this.#prunedTimeMax ?? -Infinity)) prunedTimeMax = skipped.timeMax;
          range = rangeBefore.get(entry.seq);
          // Only a range within this gap, reaching up to this entry.
          if (range !== undefined && range.fromSeq > expected) rangesKept.push(range);
          else range = undefined;
          // Nothing links this entry to what this log held before the gap (unlinkedThrough).
          if (!chain.enabled || range?.chainHash === undefined) unlinkedThrough = Math.max(unlinkedThrough, expected);
        }
        // Matched by term alone: nothing links the first entry taken to this log's end.
        if (skipped.unproven === true && last === undefined) unlinkedThrough = Math.max(unlinkedThrough, position.lastSeq);
        while (pending.length > 0 && (pending[0] as TermStart).firstSeq <= entry.seq) {
          const start = pending.shift() as TermStart;
          if (start.firstSeq > expected) startRun(start.firstSeq, start.term);
        }
        if (current === undefined || current.term !== entry.term || current.received !== received) startRun(entry.seq, entry.term);
        // The ledger reads only entries that carry a sourceSeq (a byte search, then the text).
        const entryBuffer = Buffer.from(entry.bytes.buffer, entry.bytes.byteOffset, entry.bytes.byteLength);
        if (entryBuffer.includes(SOURCE_SEQ_KEY)) ledger.addJson(entryBuffer.toString('utf8'), entry.ingestTs);
        days.countJson(entryBuffer, entry.timestamp, 'received');
        if (chain.enabled) {
          // Refuses (AUDIT_INTEGRITY_MISMATCH) an entry that does not continue this log's
          // chain. After a gap (entries the leader pruned) it must continue the chain hash the
          // sender kept for the gap's end, when it sent that; else only its own hashes are checked.
          const previous = entry.seq === expected + 1 ? head : range?.chainHash === undefined ? undefined : { hash: range.chainHash, started: true };
          const verified = chain.verify(Buffer.from(entry.bytes.buffer, entry.bytes.byteOffset, entry.bytes.byteLength).toString('utf8'), previous);
          head = verified.chainHash === undefined ? head : { hash: verified.chainHash, started: true };
          if (verified.integrity) integrity.push(verified.integrity);
          if (entry.seq === carriedCovers) coveredHash = verified.chainHash;
        } else if (entryBuffer.includes(ERASE_ACTION_BYTES)) {
          // Without the chain nothing here is verified, but the leader's erasure is applied all
          // the same: a standby configured otherwise than its leader must not keep erased values.
          const erasure = erasureEntryOf(entryBuffer.toString('utf8'), entry.seq);
          if (erasure) integrity.push(erasure);
        }
        if (entry.seq === carried?.seq) carriedHeld = true;
        putEvent(batch, entry.eventId, entry.timestamp, entry.seq, entry.bytes);
        put.push(entry);
        // A standby builds the same index keys as the leader, from the same bytes.
        index.put(batch, termsFromJson(entry.bytes), entry.timestamp, entry.seq, newTables);
        text.add(entry.seq, entry.timestamp, entry.bytes);
        last = entry;
        count++;
      }
      text.putChanged(batch);
      ledger.putChanged(batch);
      await Promise.all([days.prepare(), recordOtherCopies(db, batch, put)]);
      days.putChanged(batch);
      if (last !== undefined && integrity.length > 0) {
        const pendingEntryAt = (seq: number) => {
          const entry = entryWithSeq(put, seq);
          return entry === undefined ? undefined : { timeKey: timeKey(entry.timestamp, entry.seq), json: Buffer.from(entry.bytes.buffer, entry.bytes.byteOffset, entry.bytes.byteLength).toString('utf8') };
        };
        await addIntegrityPuts(db, batch, integrity, { index, newTables, erasedTables: this.#erasedTables, erasedBlocks: this.#staleSketches, erasedIds, pendingEntryAt });
      }
      if (last !== undefined && chain.enabled) {
        batch.put(CHAIN_HEAD_KEY, JSON.stringify({ seq: last.seq, hash: head.hash }));
        if (carried !== undefined && !carriedHeld && carried.seq > position.lastSeq && carried.seq < last.seq) {
          keptCheckpointSeq = await this.#keepCarriedCheckpoint(db, batch, carried, {
            lastSeq: position.lastSeq,
            integrity,
            chainHashAt: async (seq) => {
              if (seq === carriedCovers && seq > position.lastSeq) return coveredHash ?? rangesKept.find((kept) => kept.toSeq === seq)?.chainHash;
              if (seq === position.lastSeq) return headBefore.started ? headBefore.hash : undefined;
              if (seq > position.lastSeq) return undefined;
              return (await this.getBySeq(seq))?.chainHash ?? this.#pruned.anchorAt(seq);
            },
          });
        }
      }
      if (rangesKept.length > 0) {
        prunedAfter = new PrunedRanges(this.#pruned.all);
        for (const kept of rangesKept) prunedAfter.addAfter(kept);
        putPrunedRangeOps(batch, prunedRangeOps(this.#pruned.all, prunedAfter.all));
      }
      if (gapSeqMax > this.#gapSeqMax) {
        batch.put(localKey(GAP_SEQ_MAX), String(gapSeqMax));
        this.#gapSeqMax = gapSeqMax;
      }
      if (unlinkedThrough > this.#unlinkedThrough) {
        batch.put(localKey(UNLINKED_THROUGH), String(unlinkedThrough));
        unlinkedAfter = unlinkedThrough;
      }
      // The skipped seqs may hold erasure records: the sender's erased ids are owed, from the
      // first, unless a complete set through them was taken already (the sender deleted them
      // before this log got here: owedForTail).
      if (skippedSeqs && !completeThroughSkip(this.#erasedIdsComplete, gapSeqMax, (seq) => added.filter((run) => run.firstSeq <= seq).at(-1)?.term ?? runs.termAt(seq))) {
        owedAfter = owedThrough(this.#erasedIdsOwed, gapSeqMax);
        batch.put(ERASED_IDS_SYNC_KEY, JSON.stringify(owedAfter));
      }
      if (prunedTimeMax !== undefined) batch.put(PRUNED_TIME_MAX_KEY, String(prunedTimeMax));
    } catch (err) {
      index.forget(newTables);
      await batch.close();
      throw err;
    }
    if (last === undefined) {
      await batch.close();
      return 0;
    }
    const end = { lastSeq: last.seq, lastTerm: last.term, lastIngestTs: Math.max(position.lastIngestTs, last.ingestTs) };
    batch.put(LOG_END_KEY, logEndValue(end));
    try {
      await batch.write({ sync: true });
    } catch (err) {
      index.forget(newTables);
      throw err;
    }
    // The log now ends past the tail, and the entries may have rewritten some it holds (an
    // erasure); a standby serves no pulls, so it keeps none. Before any await: nothing may read
    // the tail's old bytes once LevelDB holds the new ones.
    this.#tail.clear();
    erasedIds.commit();
    if (owedAfter !== undefined) this.#erasedIdsOwed = owedAfter;
    if (unlinkedAfter !== undefined) this.#unlinkedThrough = unlinkedAfter;
    for (const run of added) runs.add(run);
    if (chain.enabled) chain.commit(head);
    if (keptCheckpointSeq !== undefined) this.#prunedCheckpointSeq = keptCheckpointSeq;
    if (prunedAfter !== undefined) this.#pruned = prunedAfter;
    if (prunedTimeMax !== undefined) this.#prunedTimeMax = Math.max(this.#prunedTimeMax ?? -Infinity, prunedTimeMax);
    await this.#dropUnusedTableNames(db);
    ledger.commit();
    days.commit();
    setPosition(end);
    return count;
  }

  /**
   * Checks a carried checkpoint (verifyCarriedCheckpoint) and adds to `batch` what keeps it as
   * this log's newest deleted checkpoint: its index entry, its seq in local metadata (the
   * previous one's index entry goes, as retention does), and the key that signed it when this
   * log lacks it. Answers its seq, or undefined when it is no newer than a checkpoint this log holds.
   */
  async #keepCarriedCheckpoint(
    db: ExclusiveContext['db'],
    batch: { put(key: string, value: string): unknown; del(key: string): unknown },
    carried: CarriedCheckpoint,
    log: { lastSeq: number; integrity: readonly IntegrityEntry[]; chainHashAt: (seq: number) => Promise<string | undefined> },
  ): Promise<number | undefined> {
    const [newestEntry] = await db.iterator({ gte: PREFIX.checkpoint, lt: prefixEnd(PREFIX.checkpoint), reverse: true, limit: 1 }).all();
    if (newestEntry !== undefined && decodeUint(newestEntry[0].slice(PREFIX.checkpoint.length)) >= carried.seq) return undefined;
    let newest: SignedCheckpoint | undefined;
    try {
      newest = newestEntry === undefined ? undefined : parseSignedCheckpoint(newestEntry[1]);
    } catch {
      newest = undefined;
    }
    const { signed, registerKey } = await verifyCarriedCheckpoint(carried, {
      lastSeq: log.lastSeq,
      newest,
      chainHashAt: (seq) => log.chainHashAt(seq),
      keyOf: async (keyId) => {
        const kept = await registeredKey(db, keyId);
        if (kept !== undefined) return kept;
        // A registration among the entries applied with it (its record survived the sender's retention).
        for (const entry of log.integrity) {
          if (entry.kind !== 'registerKey' || entry.seq >= carried.seq) continue;
          try {
            if (parsePublishedKey(entry.details).keyId === keyId) return { seq: entry.seq, key: entry.details };
          } catch {
            // not a key
          }
        }
        return undefined;
      },
    });
    batch.put(checkpointKey(carried.seq), carried.checkpoint);
    if (this.#prunedCheckpointSeq !== undefined && this.#prunedCheckpointSeq < carried.seq) batch.del(checkpointKey(this.#prunedCheckpointSeq));
    batch.put(PRUNED_CHECKPOINT_KEY, String(carried.seq));
    if (registerKey !== undefined) batch.put(keyKey(signed.keyId), JSON.stringify(registerKey satisfies RegisteredKey));
    return carried.seq;
  }

  /**
   * What a pull answer carries besides `entries` (read after `afterSeq`) about the seqs they
   * skip because retention deleted them here (see applyReplicated): the ranges retention deleted
   * that end after `afterSeq` and before the last of `entries` (cut to start after `afterSeq`),
   * with the chain hash at each one's end; and this log's newest checkpoint whose record
   * retention deleted (its kept index entry, with the registration of the key that signed it),
   * when that record's seq lies in between — the asker gets entries past it but never the record.
   */
  async skippedByRetention(afterSeq: number, entries: readonly Uint8Array[]): Promise<SkippedByRetention> {
    this.#openWriter();
    const lastEntry = entries[entries.length - 1];
    // Every seq above the highest ever deleted or skipped is in the log: nothing was skipped.
    if (lastEntry === undefined || afterSeq >= this.#gapSeqMax) return {};
    const lastSeq = readReplicatedEntry(lastEntry).seq;
    const ranges = this.#pruned.all.filter((range) => range.toSeq > afterSeq && range.toSeq < lastSeq).map((range) => ({ ...range, fromSeq: Math.max(range.fromSeq, afterSeq + 1) }));
    const checkpoint = await this.#prunedCheckpointBetween(afterSeq, lastSeq);
    const timeMax = this.#prunedTimeMax;
    return { ...(ranges.length > 0 ? { ranges } : {}), ...(checkpoint === undefined ? {} : { checkpoint }), ...(timeMax === undefined ? {} : { timeMax }) };
  }

  async #prunedCheckpointBetween(afterSeq: number, lastSeq: number): Promise<CarriedCheckpoint | undefined> {
    const seq = this.#prunedCheckpointSeq;
    if (seq === undefined || seq <= afterSeq || lastSeq <= seq) return undefined;
    const checkpoint = await this.#db.get(checkpointKey(seq));
    if (checkpoint === undefined) return undefined;
    let key: RegisteredKey | undefined;
    try {
      key = await registeredKey(this.#db, parseSignedCheckpoint(checkpoint).keyId);
    } catch {
      key = undefined;
    }
    return { seq, checkpoint, ...(key === undefined ? {} : { key }) };
  }

  /**
   * Cuts the log before `seq`: removes every entry from `seq` on (entries the leader's log does
   * not have) and puts those events back into the outbox in the same batch, so they are
   * forwarded to the leader again rather than lost. Returns how many moved, by term.
   *
   * With the chain on, the log must know the chain hash where it ends after the cut: the
   * leader's next entry has to link to it, and a pull states it. When retention deleted the
   * entry at `seq - 1` inside a range that ends past it, that hash is gone (only the range's
   * end keeps one), so the cut goes back to the last seq whose hash is known — an entry still
   * here, the end of a deleted range, or 0 — and the leader's entries from there are taken
   * again (`keptThrough`). They are verified against that hash; what lies between was deleted
   * here only once tiered, so the tier holds it, and the leader's answer carries its own
   * deleted ranges with their hashes. Cutting just at `seq` left the log ending on a hash it did
   * not have (the last entry before the range's, or none), and every entry the leader sent was
   * refused as not following this node's chain, for good.
   */
  async divertSuffixToOutbox(seq: number): Promise<DivertResult> {
    return this.#openWriter().exclusive(async (context) => {
      let from = seq;
      // Decided in the writer's turn: a prune in between could delete the entry found here.
      if (seq <= context.position.lastSeq) from = (await this.#lastKnownChainSeq(seq - 1)) + 1;
      const { result } = await this.#divertWithin(context, from);
      return from < seq ? { ...result, keptThrough: from - 1 } : result;
    });
  }

  /**
   * The highest seq at or below `seq` (below the log's end) whose chain hash this log knows:
   * an entry still here, or the end of a range retention deleted that kept its hash; 0 when
   * none is (the chain starts there). `seq` itself without the chain.
   */
  async #lastKnownChainSeq(seq: number): Promise<number> {
    if (!(this.#chain as RecordChain).enabled || seq <= 0) return Math.max(seq, 0);
    const keys = await this.#db.keys({ gte: PREFIX.seq, lte: seqKey(seq), reverse: true, limit: 1 }).all();
    let known = keys[0] === undefined ? 0 : parseSeqFromSeqKey(keys[0]);
    for (const range of this.#pruned.all) if (range.toSeq <= seq && range.toSeq > known && range.chainHash !== undefined) known = range.toSeq;
    return known;
  }

  /**
   * Makes this log hold the tier's entries from `seq` on (`entries`, the tier's own record of
   * them with their term boundaries `starts`), in place of its own: the tier holds entries this
   * log lacks (a leader tiered them and died before any survivor received them) and this log
   * numbered its own entries with the same seqs since. Its own entries from `seq` on move to
   * the outbox, so they are ordered again after the adopted ones rather than lost (as a standby
   * whose log diverged does). Nothing changes unless every entry is in order from `seq` and,
   * with the chain on, continues this log's chain at `seq - 1`: an entry that does not is
   * refused (AUDIT_INTEGRITY_MISMATCH) before anything is cut. Appends wait meanwhile.
   *
   * `closing` (a cluster's adoption) is ordered right after the adopted entries, in the same
   * write as them, under `closing.term`: the record of the adoption, in a term above every
   * term the cluster handed out. Without it the log would end with the tier's entries, of an
   * older term than the cut entries standbys still hold, and the next election would go to a
   * standby, which undoes the adoption (its log wins, this one diverts the adopted entries).
   * Its event is built once the cut is known (`moved`); its seq is answered as `closingSeq`.
   */
  async adoptSuffix(
    seq: number,
    entries: readonly Uint8Array[],
    starts: readonly TermStart[],
    mayAdopt: () => boolean = () => true,
    closing?: AdoptionClosing,
  ): Promise<DivertResult & { adopted: number; closingSeq?: number }> {
    const adopted = await this.#openWriter().exclusive(async (context) => {
      const end = await this.#checkContinues(seq, entries);
      // Asked last, inside the writer's step: a leader deposed while the entries were checked cuts nothing.
      if (!mayAdopt()) throw new AuditError(AuditErrorCode.NOT_LEADER, 'this node no longer leads: the tier\'s entries were not adopted', { retryable: true });
      const diverted = await this.#divertWithin(context, seq);
      let applied = entries;
      let appliedStarts = starts;
      let closingSeq: number | undefined;
      if (closing !== undefined && entries.length > 0) {
        closingSeq = seq + entries.length;
        const ingestTs = Math.max(closing.nowMs, diverted.position.lastIngestTs, end.lastIngestTs);
        const event = closing.event(diverted.result.moved);
        const chain = this.#chain as RecordChain;
        const json = chain.enabled && end.head !== undefined ? chain.append(event, ingestTs, closingSeq, closing.term, end.head.hash).json : storedEventJson(event, ingestTs, closingSeq, closing.term);
        applied = [...entries, Buffer.from(json, 'utf8')];
        appliedStarts = [...starts, { firstSeq: closingSeq, term: closing.term }];
      }
      // Counted as ordered here, not received: no other node is known to hold them (the tier
      // does), so ack=replicated waits for a standby to confirm them like this leader's own.
      const count = await this.#applyWithin({ ...context, position: diverted.position }, applied, appliedStarts, false);
      return { ...diverted.result, adopted: closingSeq === undefined ? count : count - 1, ...(closingSeq === undefined ? {} : { closingSeq }) };
    });
    if (adopted.adopted > 0) this.#logGrew();
    return adopted;
  }

  /**
   * Throws unless `entries` run from `seq` in order and (chain on) continue the chain at
   * `seq - 1`. Answers the chain head after the last entry (chain on) and the highest ingestTs
   * among them.
   */
  async #checkContinues(seq: number, entries: readonly Uint8Array[]): Promise<{ head: ChainHead | undefined; lastIngestTs: number }> {
    const chain = this.#chain as RecordChain;
    let head: ChainHead | undefined = chain.enabled ? await this.#chainHeadAt(seq - 1) : undefined;
    let lastIngestTs = 0;
    let expected = seq;
    let sinceYield = 0;
    for (const bytes of entries) {
      // Hashing up to 200,000 entries in one go would hold the event loop for seconds (lease renewals among what waits).
      if (++sinceYield === WRITER_YIELD_EVENTS) {
        sinceYield = 0;
        await yieldToEventLoop();
      }
      const entry = readReplicatedEntry(bytes);
      if (entry.seq !== expected) throw new TypeError(`adopted entries must run from seq ${seq} without a gap: seq ${entry.seq} where ${expected} was due`);
      expected++;
      lastIngestTs = Math.max(lastIngestTs, entry.ingestTs);
      if (head === undefined) continue;
      const verified = chain.verify(Buffer.from(entry.bytes.buffer, entry.bytes.byteOffset, entry.bytes.byteLength).toString('utf8'), head);
      head = verified.chainHash === undefined ? head : { hash: verified.chainHash, started: true };
    }
    return { head, lastIngestTs };
  }

  /** divertSuffixToOutbox's write, within an exclusive operation; also where the log ends after it. */
  async #divertWithin({ db, position, setPosition, runs }: ExclusiveContext, seq: number): Promise<{ result: DivertResult; position: WriterPosition }> {
    const chain = this.#chain as RecordChain;
    const result: DivertResult = { moved: 0, terms: {} };
    if (seq > position.lastSeq) return { result, position };
    // Read whole or not at all: a suffix cut short would leave entries behind that the log end no longer counts.
    if (position.lastSeq - seq + 1 > DIVERT_ENTRIES_MAX) {
      throw new AuditError(AuditErrorCode.STORE_WRITE_FAILED, `cutting the log at seq ${seq} would move ${position.lastSeq - seq + 1} entries to the outbox, more than ${DIVERT_ENTRIES_MAX} at once; nothing was cut`);
    }
    const suffix = await this.#readSeqRange(seq - 1, DIVERT_ENTRIES_MAX);
    const ops: Array<{ type: 'put'; key: string; value: string } | { type: 'del'; key: string }> = [];
    const index = this.#openIndex();
    const sink: IndexSink = { put: (key, value) => ops.push({ type: 'put', key, value }), del: (key) => ops.push({ type: 'del', key }) };
    // What is cut was never this log's: it is received again when it comes back ordered.
    const days = this.#days.begin();
    const tieredCountedThrough = Math.min(this.#tieredCountedThrough, seq - 1);
    const idsHeld: Array<{ eventId: string; suffix: string }> = [];
    for (const event of suffix) {
      ops.push({ type: 'del', key: timeKey(event.timestamp, event.seq) }, { type: 'del', key: seqKey(event.seq) });
      idsHeld.push({ eventId: event.eventId, suffix: timeKeySuffix(event.timestamp, event.seq) });
      index.del(sink, event, event.timestamp, event.seq);
      days.count(event, 'received', -1);
      if (event.seq <= this.#tieredCountedThrough) days.count(event, 'tiered', -1);
      result.terms[event.term] = (result.terms[event.term] ?? 0) + 1;
      // A checkpoint or key registration speaks of this log's chain, which ends here: it is
      // dropped, not sent to be ordered again (the leader makes its own).
      const kind = integrityKindOf(event.source, event.action, event.decision);
      if (kind === 'checkpoint' || kind === 'registerKey') continue;
      // A settings record goes back as it is: the leader it reaches tells whether its change is
      // in force there (appendForwarded, forwarded-settings.ts).
      ops.push({ type: 'put', key: outboxKey(this.#outboxNext++), value: JSON.stringify(toAuditEvent(event)) });
      result.moved++;
    }
    await deleteIdKeysOf(db, { put: (key, value) => ops.push({ type: 'put', key, value }), del: (key) => ops.push({ type: 'del', key }) }, idsHeld);
    for (const key of await db.keys({ gte: checkpointKey(seq), lt: prefixEnd(PREFIX.checkpoint) }).all()) ops.push({ type: 'del', key });
    // The checkpoint kept for retention goes too when the cut reaches it (its index entry just went).
    const prunedCheckpointCut = this.#prunedCheckpointSeq !== undefined && this.#prunedCheckpointSeq >= seq;
    if (prunedCheckpointCut) ops.push({ type: 'del', key: PRUNED_CHECKPOINT_KEY });
    for (const key of await db.keys({ gte: erasureKey(seq), lt: prefixEnd(PREFIX.erasure) }).all()) ops.push({ type: 'del', key });
    // The chain head goes back with the log: the next entry must chain to the one at seq - 1.
    const known = await this.#knownChainHeadAt(seq - 1);
    const head = known ?? (await this.#chainHeadAt(seq - 1));
    // Ranges deleted by retention from the cut on (a sender's, kept with entries it replicated)
    // are no longer this log's; one the cut ends inside now ends at seq - 1, with its hash when known.
    let prunedCut: PrunedRanges | undefined;
    if (this.#pruned.all.some((range) => range.toSeq >= seq)) {
      prunedCut = new PrunedRanges(this.#pruned.all);
      prunedCut.cutFrom(seq, known?.started === true ? known.hash : undefined);
      ops.push(...prunedRangeOps(this.#pruned.all, prunedCut.all));
    }
    for (const [key, value] of await db.iterator({ gte: PREFIX.key, lt: prefixEnd(PREFIX.key) }).all()) {
      if ((JSON.parse(value) as RegisteredKey).seq >= seq) ops.push({ type: 'del', key });
    }
    const dropped = runs.all.filter((run) => run.firstSeq >= seq);
    for (const run of dropped) ops.push({ type: 'del', key: termRunKey(run.firstSeq) });
    // The highest ingestTs ever assigned survives the truncation: it must never go back.
    const end = { lastSeq: seq - 1, lastTerm: 0, lastIngestTs: position.lastIngestTs };
    ops.push({ type: 'put', key: localKey('highestIngestTs'), value: String(position.lastIngestTs) }, { type: 'put', key: LOG_END_KEY, value: logEndValue(end) });
    ops.push({ type: 'put', key: CHAIN_HEAD_KEY, value: JSON.stringify({ seq: seq - 1, hash: head.hash }) });
    await days.prepare();
    days.putChanged({ put: (key, value) => ops.push({ type: 'put', key, value }) });
    ops.push({ type: 'put', key: TIERED_COUNTED_THROUGH_KEY, value: String(tieredCountedThrough) });
    // Erased ids owed through a seq the cut removes: owed through the cut's end now (the seqs
    // skipped above it are no longer this log's; a node holding seq - 1 in this log's term
    // holds every record skipped below). Else no node of the leader's line would ever qualify.
    const owedBefore = this.#erasedIdsOwed;
    const owedAfter = owedBefore !== undefined && owedBefore.throughSeq >= seq ? { after: owedBefore.after, throughSeq: seq - 1 } : owedBefore;
    if (owedAfter !== owedBefore) ops.push({ type: 'put', key: ERASED_IDS_SYNC_KEY, value: JSON.stringify(owedAfter) });
    // A complete set taken through a seq the cut removes no longer counts (it may have been
    // another history's there; the next skip owes the ids again).
    const completeBefore = this.#erasedIdsComplete;
    const completeAfter = completeBefore === undefined || completeBefore.seq < seq ? completeBefore : undefined;
    if (completeAfter !== completeBefore) ops.push(completeAfter === undefined ? { type: 'del', key: ERASED_IDS_COMPLETE_KEY } : { type: 'put', key: ERASED_IDS_COMPLETE_KEY, value: JSON.stringify(completeAfter) });
    // No unlinked join is left above the cut: entries ordered here after it are not held back
    // (review). Those at or below it stay marked.
    const unlinkedAfter = Math.min(this.#unlinkedThrough, seq - 1);
    if (unlinkedAfter !== this.#unlinkedThrough) ops.push({ type: 'put', key: localKey(UNLINKED_THROUGH), value: String(unlinkedAfter) });
    await db.batch(ops, { sync: true });
    this.#unlinkedThrough = unlinkedAfter;
    this.#erasedIdsOwed = owedAfter;
    this.#erasedIdsComplete = completeAfter;
    days.commit();
    this.#tieredCountedThrough = tieredCountedThrough;
    this.#deleteVersion++;
    this.#cuts++;
    if (prunedCheckpointCut) this.#prunedCheckpointSeq = undefined;
    if (prunedCut !== undefined) this.#pruned = prunedCut;
    runs.cutAfter(seq - 1);
    this.#tail.clear();
    chain.commit(head);
    this.#outboxCount += result.moved;
    const cut = { ...end, lastTerm: runs.termAt(seq - 1) };
    setPosition(cut);
    // Synchronously with the cut, so no one counts progress past it in between (a leader's standbys).
    for (const listener of this.#cutListeners) listener(seq - 1);
    return { result, position: cut };
  }

  /**
   * The chain head of a log that ends at `seq`: that entry's chain hash; when retention deleted
   * it, the hash kept at the end of its pruned range; else the last entry before it that is
   * still here (a log without chain fields has no hash to keep).
   */
  async #chainHeadAt(seq: number): Promise<ChainHead> {
    const known = await this.#knownChainHeadAt(seq);
    if (known !== undefined) return known;
    const keys = await this.#db.keys({ gte: PREFIX.seq, lt: seqKey(seq), reverse: true, limit: 1 }).all();
    const key = keys[0];
    return headOf(key === undefined ? undefined : await this.getBySeq(parseSeqFromSeqKey(key)));
  }

  /**
   * The chain hash of this log's entry at `seq` when it knows it: the entry's own, or the hash
   * kept at the end of a range retention deleted (or skipped) that ends there.
   */
  async knownChainHashAt(seq: number): Promise<string | undefined> {
    const head = await this.#knownChainHeadAt(seq);
    return head?.started === true ? head.hash : undefined;
  }

  /**
   * The chain head of a log that ends at `seq` when this log knows it: that entry's, the hash
   * kept at the end of a pruned range ending there, or the start of the chain before seq 1.
   */
  async #knownChainHeadAt(seq: number): Promise<ChainHead | undefined> {
    if (seq > this.position.lastSeq) return undefined;
    if (seq <= 0) return headOf(undefined);
    const entry = await this.getBySeq(seq);
    if (entry !== undefined) return headOf(entry);
    const range = this.#pruned.all.find((candidate) => candidate.toSeq === seq);
    return range?.chainHash === undefined ? undefined : { hash: range.chainHash, started: true };
  }

  async getByEventId(eventId: string): Promise<StoredEvent | undefined> {
    const suffix = await this.#db.get(idKey(eventId));
    if (suffix === undefined) return undefined;
    const value = await this.#db.get(PREFIX.time + suffix);
    return value === undefined ? undefined : (JSON.parse(value) as StoredEvent);
  }

  /**
   * The seq each eventId is stored at, undefined where none is: one read of the id keys, whose
   * values name the entry's time and seq (no event is read). What `ack=replicated` polls: it
   * read and parsed every pending event, one after another, at each change of the log.
   */
  async seqsOfEventIds(eventIds: readonly string[]): Promise<Array<number | undefined>> {
    const suffixes = await this.#db.getMany(eventIds.map(idKey));
    return suffixes.map((suffix) => (suffix === undefined ? undefined : seqOfSuffix(suffix)));
  }

  async getBySeq(seq: number): Promise<StoredEvent | undefined> {
    const stored = await storedAtSeq(this.#db, seq);
    return stored === undefined ? undefined : (JSON.parse(stored.json) as StoredEvent);
  }

  /**
   * Like readBySeq, but each event as the UTF-8 bytes of the JSON this store holds: what a
   * leader hands its standbys, who store it as it is (applyReplicated). Bytes, because the
   * leader only passes them on: decoding them to strings and encoding them again for the
   * socket was a quarter of a busy leader's CPU.
   */
  async readEncodedBySeq(afterSeq: number, limit: number): Promise<Uint8Array[]> {
    this.#openWriter();
    const kept = this.#tail.read(afterSeq, limit);
    if (kept !== undefined) return kept;
    const values = await getManyInKeyOrder<Uint8Array>(this.#db, await this.#timeKeysAfter(afterSeq, limit), { valueEncoding: 'view' });
    return values.filter((v): v is Uint8Array => v !== undefined);
  }

  async #timeKeysAfter(afterSeq: number, limit: number): Promise<string[]> {
    const entries = await this.#db.iterator({ gt: seqKey(afterSeq), lt: prefixEnd(PREFIX.seq), limit: Math.min(limit, 1_000_000) }).all();
    return entries.map(([key, ts]) => PREFIX.time + ts + key.slice(PREFIX.seq.length));
  }

  /**
   * Keeps at most `bytes` of the newest entries in the log tail from now on (0: none): a single
   * node keeps one only while it tiers, since nothing else reads it there.
   */
  setLogTailBytes(bytes: number): void {
    this.#tail.resize(bytes);
  }

  /** Bytes the log tail holds now. */
  get logTailHeldBytes(): number {
    return this.#tail.bytes;
  }

  /**
   * Events with seq > `afterSeq` in ingest order, at most `limit` of them. From the log tail
   * when it holds them (the sweep of a leader that keeps up reads what was just written): from
   * LevelDB, a seq range is an iterator over the seq keys and then a point read per event,
   * whose time keys are scattered when events arrive late (a block found and decompressed per event).
   */
  async readBySeq(afterSeq: number, limit: number): Promise<StoredEvent[]> {
    this.#openWriter();
    const kept = this.#tail.read(afterSeq, limit);
    if (kept !== undefined) return parseBytesInTurns<StoredEvent>(kept);
    return this.#readSeqRange(afterSeq, limit);
  }

  async #readSeqRange(afterSeq: number, limit: number): Promise<StoredEvent[]> {
    const values = await getManyInKeyOrder<string>(this.#db, await this.#timeKeysAfter(afterSeq, limit));
    // In turns: a sweep's batch parsed in one go held every other request of the node.
    return parseInTurns<StoredEvent>(values);
  }

  /**
   * Matching events by event time, then seq, both descending (the key order; within one event
   * time this is not yet the API's newest-first order by ingestTs and eventId, which the reader
   * restores). Streams from a LevelDB iterator over the time range (up to a cursor's time), so
   * memory stays bounded however much matches; breaking out of the loop closes the iterator.
   * `expectedEvents`: how many the caller will likely take (a page and one more), so the first
   * read fetches about that many. Each event's stored JSON is kept for storedJsonOf.
   */
  async *search(filter: Omit<SearchFilter, 'limit'>, options: { expectedEvents?: number; signal?: AbortSignal } = {}): AsyncGenerator<StoredEvent> {
    for await (const batch of this.searchBatches(filter, options)) yield* batch;
  }

  /**
   * `search`, a batch of matching events per native read (none empty): a reader that takes a
   * page pays one step of the generator per read instead of one per event (for a 200-event
   * page, about as much as parsing the events). `textEvents`: events are StoredEventText,
   * parsed only when a field beyond their place in the order and userId is read (a page
   * answered as JSON is cut from the stored text and never needs one). `signal`: once aborted,
   * the next native read throws its reason instead (a client gone, a deadline passed), so a
   * scan that matches nothing stops too.
   */
  async *searchBatches(filter: Omit<SearchFilter, 'limit'>, options: { expectedEvents?: number; textEvents?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<StoredEvent[]> {
    const matches = compileFilter({ ...filter, limit: 1 });
    const toMs = upperTimeMs(filter);
    const range = {
      gte: filter.fromMs === undefined ? PREFIX.time : timeLowerBound(filter.fromMs),
      lt: toMs === undefined ? prefixEnd(PREFIX.time) : timeUpperBoundInclusive(toMs),
    };
    // Free text must appear in the stored JSON (lower-cased, JSON-escaped as stored) for any
    // field to contain it: a cheap necessary test that skips JSON.parse for most non-matches.
    // The exact filter still decides on the parsed event.
    const needle = filter.q === undefined ? undefined : JSON.stringify(filter.q).slice(1, -1);
    this.#openWriter();
    const { expectedEvents } = options;
    // A copy taken before the plan opens its iterators: a block whose rebuild ends after this
    // is read through the old sketch, as stale; one rebuilt before is read through its new one.
    const staleSketches = this.#staleSketches.size === 0 ? undefined : new Set(this.#staleSketches);
    // Every read of the search is made at one point of the store's history: an index plan reads
    // keys and then the events they name, and a stream may take a minute between the two; an
    // event retention deleted meanwhile (tiered, where no reader of this search looks) was
    // silently missing from the answer (review: an NDJSON stream gave 1,024 of 1,500).
    const erasuresBefore = this.#erasedIds.version;
    const snapshot = this.#db.snapshot();
    try {
      const plan = await planIndexedSearch(this.#db, filter, this.#openIndex().knownTables, expectedEvents, staleSketches, snapshot);
      // A time scan for a page (nothing but time filtered): its first read is the page, plus room
      // for equal event times at its end, and its blocks are kept cached for the next page read.
      const pageScan = expectedEvents !== undefined && !filterBeyondTime(filter);
      const scan = pageScan ? { first: expectedEvents + TIME_SCAN_SLACK, fillCache: true, snapshot } : { snapshot };
      for await (const values of plan?.batches ?? rangeBatchesNewestFirst(this.#db, range, scan)) {
        options.signal?.throwIfAborted();
        const candidates = needle === undefined ? values : values.filter((value) => lowerStoredJson(value).includes(needle));
        // The snapshot still holds the values of an erasure committed since it was taken (a
        // slow client's stream): those are shown as the marker and the filter judges them so,
        // as a read of the store as it is now would (review: a stream open across an erasure
        // returned the erased values of every event it had not sent yet).
        const events = this.#erasedIds.version === erasuresBefore ? matchingEvents(candidates, matches, options.textEvents === true) : await this.#matchingErasedSince(candidates, matches);
        if (events.length > 0) yield events;
      }
    } finally {
      await snapshot.close();
    }
  }

  /** `values` parsed, with what erasures committed since they were read erased shown as the marker, that match. */
  async #matchingErasedSince(values: readonly string[], matches: (event: StoredEvent) => boolean): Promise<StoredEvent[]> {
    const parsed = values.map((value) => JSON.parse(value) as StoredEvent);
    const masked = await this.maskErased(parsed);
    const events: StoredEvent[] = [];
    masked.forEach((event, i) => {
      if (!matches(event)) return;
      // Its stored text only where nothing was erased: the answer is cut from it.
      if (event === parsed[i]) storedJson.set(event, values[i] as string);
      events.push(event);
    });
    return events;
  }

  /**
   * Which secondary indexes `search(filter)` would read, most selective first ('text': the
   * free-text sketches); empty when it would scan the time range. For tests and for explaining a slow search.
   */
  async searchPlan(filter: Omit<SearchFilter, 'limit'>): Promise<Array<IndexField | 'text'>> {
    this.#openWriter();
    const plan = await planIndexedSearch(this.#db, filter, this.#openIndex().knownTables);
    await plan?.close();
    return plan?.fields ?? [];
  }

  /**
   * Puts events into the outbox (synced): received here, to be forwarded to the leader. Each is
   * kept as the JSON made where it was validated, which is also what is forwarded. `freshIds`
   * are the ids this node assigned on receipt (see OutboxEntry.unsentNewId).
   */
  async enqueueOutbox(events: readonly EncodedEvent[], options: { freshIds?: ReadonlySet<string> } = {}): Promise<void> {
    this.#openWriter();
    // Chained: the array form with options clones every operation (BENCHMARKS.md, Ingest).
    const batch = this.#db.batch();
    for (const event of events) {
      const n = this.#outboxNext++;
      batch.put(outboxKey(n), event.json);
      if (options.freshIds?.has(event.eventId)) this.#unsentNewIds.add(n);
      if (event.timeAssigned === true) this.#timeAssigned.add(n);
    }
    // Store before ack: the 200 promises the events survive this process.
    await batch.write({ sync: true });
    this.#outboxCount += events.length;
  }

  /**
   * The oldest outbox entries, in the order they were received, each as the event's JSON text
   * (forwarded as it is; the leader parses it once).
   */
  async readOutbox(limit: number): Promise<OutboxEntry[]> {
    this.#openWriter();
    const entries = await this.#db.iterator({ gte: outboxKey(this.#outboxHead), lt: prefixEnd(PREFIX.outbox), limit }).all();
    return entries.map(([key, json]) => {
      const n = parseOutboxNumber(key);
      return { key, json, unsentNewId: this.#unsentNewIds.take(n), timeAssigned: this.#timeAssigned.has(n) };
    });
  }

  /**
   * Removes forwarded entries once the leader has stored them. Not synced: a deletion lost in
   * a crash only means the entries are forwarded again, and the leader keeps each eventId once.
   */
  async deleteOutbox(keys: readonly string[]): Promise<void> {
    this.#openWriter();
    const batch = this.#db.batch();
    for (const key of keys) batch.del(key);
    await batch.write({ sync: false });
    this.#outboxCount = Math.max(0, this.#outboxCount - keys.length);
    // Entries leave from the front: the head moves past a deleted run that starts at it.
    const deleted = new Set(keys.map(parseOutboxNumber));
    while (deleted.has(this.#outboxHead)) this.#outboxHead++;
    this.#timeAssigned.forgetBelow(this.#outboxHead);
  }

  /**
   * Rows of events read elsewhere (a tier) with what erasures committed here erased under their
   * eventIds shown as the marker, as this store shows its own copies. A sweep rewrites the
   * tiered copies of an erased event only at its next run (or later, while sweeps fail), and
   * until then a tier row still holds the values: a search that matched or showed them would
   * undo the erasure for every reader. Ids no erasure named cost no read (a filter rules them out).
   */
  async maskErased<R extends ErasableRow>(rows: readonly R[]): Promise<readonly R[]> {
    const view = await this.#erasedIds.view(rows.map((row) => row.eventId ?? ''));
    return view.size === 0 ? rows : maskErasedRows(rows, view);
  }

  /**
   * The eventIds waiting in the outbox, without handing the entries out (readOutbox does):
   * for checks and diagnostics, not for forwarding.
   */
  async outboxEventIds(): Promise<string[]> {
    this.#openWriter();
    const values = await this.#db.values({ gte: outboxKey(this.#outboxHead), lt: prefixEnd(PREFIX.outbox) }).all();
    return values.map((json) => (JSON.parse(json) as { eventId: string }).eventId);
  }

  /** Entries waiting in the outbox. */
  get outboxCount(): number {
    return this.#outboxCount;
  }

  /**
   * Deletes events whose event time is before `cutoffMs` — and, when `maxSeq` is given, only
   * those with seq ≤ `maxSeq` (tiered ones: an untiered event is never deleted while tiering
   * is on) — oldest first, `batchSize` at a time, calling `between()` after each batch so a
   * large prune can yield to ingest and stop early. Deletes are not synced: a prune lost in a
   * crash is simply redone. A cutoff before the epoch (a retention longer than the time since
   * 1970) deletes nothing: no event time is before 0. `tieredOnly`: only events counted as tiered
   * (countTieredThrough) too — `maxSeq` is then a tier's watermark, which a standby may know
   * before it has applied the entries up to it; deleted uncounted, they were missing from the
   * ledger's tiered counts and their ids were not kept (pruned-ids.ts; review).
   */
  async pruneBefore(cutoffMs: number, batchSize: number, between: () => Promise<boolean>, maxSeq?: number, tieredOnly = false): Promise<PruneResult> {
    // The table names the deleted events named, checked once per prune (or per
    // PRUNED_TABLES_CHECK_NAMES of them): a day's events name the same tables batch after batch.
    const prunedTables = new PrunedTableNames();
    try {
      return await this.#pruneBatches(cutoffMs, batchSize, between, maxSeq, tieredOnly, prunedTables);
    } finally {
      // Once the prune returns, no name only its events named is left in the dictionary.
      // Never in place of the prune's own outcome: a name left stays only as it did before.
      if (this.#status === 'open' && prunedTables.size > 0) await this.#dropPrunedTableNames(prunedTables.take()).catch(() => undefined);
    }
  }

  /**
   * Of the checkpoint records among `events` (retention would delete them), those it may: the
   * first checkpoints of the log in seq order, none after one that stays. Retention deletes by
   * event time, a checkpoint's time is its signer's clock, and the index of checkpoints keeps
   * only the newest one deleted: one dated before the checkpoint it follows (a clock stepped
   * back, a successor with a slower clock) deleted first left the index listing a chain with a
   * link missing, and verify reported a removed or forged checkpoint on an untampered log
   * (review). Undefined when `events` holds no checkpoint.
   */
  async #checkpointsDeletable(events: readonly StoredEvent[]): Promise<Set<number> | undefined> {
    const candidates = new Set(events.filter((event) => integrityKindOf(event.source, event.action, event.decision) === 'checkpoint').map((event) => event.seq));
    if (candidates.size === 0) return undefined;
    // The checkpoints the log holds up to the newest candidate, in seq order: the index lists
    // them (and the newest deleted one, which is not held). Read one key at a time and stopped at
    // the first that stays: checkpoints held back behind one dated far ahead (a clock a year
    // fast) would otherwise all be read at every prune batch.
    const newest = Math.max(...candidates);
    const deletable = new Set<number>();
    const keys = this.#db.keys({ gte: PREFIX.checkpoint, lte: checkpointKey(newest) });
    try {
      for await (const key of keys) {
        const seq = decodeUint(key.slice(PREFIX.checkpoint.length));
        if (seq === this.#prunedCheckpointSeq) continue;
        if (!candidates.has(seq)) break;
        deletable.add(seq);
      }
    } finally {
      await keys.close();
    }
    return deletable;
  }

  async #pruneBatches(cutoffMs: number, batchSize: number, between: () => Promise<boolean>, maxSeq: number | undefined, tieredOnly: boolean, prunedTables: PrunedTableNames): Promise<PruneResult> {
    const result: PruneResult = { deleted: 0, batches: 0 };
    const before = timeLowerBound(Math.max(0, cutoffMs));
    let from: string = PREFIX.time;
    for (;;) {
      if (this.#status !== 'open') return result;
      const batchFrom = from;
      const entries = await this.#db.iterator({ gte: from, lt: before, limit: batchSize }).all();
      if (entries.length === 0) return result;
      const last = entries[entries.length - 1] as [string, string];
      from = last[0] + '\u0000';
      const batch = this.#db.batch();
      const index = this.#openIndex();
      let batchSeqMax = 0;
      let batchTimeMax = Number.NEGATIVE_INFINITY;
      let deleted = 0;
      const touchedBlocks = new Set<number>();
      const prunedSeqs: Array<{ seq: number; chainHash: string | undefined }> = [];
      const days = this.#days.begin();
      const checkpointSeqs: number[] = [];
      // Each deleted event's eventId with the entry its id key must still point at to go too,
      // and its time and seq: its id is remembered when it was tiered.
      const idsHeld: Array<{ eventId: string; suffix: string; timestamp: number; seq: number }> = [];
      // What the policy lets go: up to maxSeq, and under a tier only events counted tiered (a
      // cut lowers that count only below the entries it moves out, which the write finds gone).
      const candidates = entries
        .map(([key, value]) => [key, JSON.parse(value) as StoredEvent, value] as const)
        .filter(([, event]) => (maxSeq === undefined || event.seq <= maxSeq) && (!tieredOnly || event.seq <= this.#tieredCountedThrough));
      // The time keys this batch deletes, with the values read: checked again in the writer's turn.
      const deletedKeys: string[] = [];
      const deletedValues: string[] = [];
      const checkpointsDeletable = await this.#checkpointsDeletable(candidates.map(([, event]) => event));
      // Erasure records naming a copy that stays (timed after them) stay with it (erasure-retention.ts).
      const erasuresKept = await erasuresNamingHeldCopies(this.#db, candidates.map(([, event]) => event), new Set(candidates.map(([, event]) => event.seq)));
      for (const [key, event, value] of candidates) {
        if (checkpointsDeletable !== undefined && integrityKindOf(event.source, event.action, event.decision) === 'checkpoint' && !checkpointsDeletable.has(event.seq)) continue;
        if (erasuresKept.has(event.seq)) continue;
        deletedKeys.push(key);
        deletedValues.push(value);
        days.count(event, 'pruned');
        touchedBlocks.add(blockOfSeq(event.seq));
        batch.del(key);
        batch.del(seqKey(event.seq));
        idsHeld.push({ eventId: event.eventId, suffix: key.slice(PREFIX.time.length), timestamp: event.timestamp, seq: event.seq });
        index.del(batch, event, event.timestamp, event.seq);
        for (const table of event.tables) prunedTables.add(table);
        const kind = integrityKindOf(event.source, event.action, event.decision);
        if (kind === 'checkpoint') checkpointSeqs.push(event.seq);
        else if (kind === 'erase') batch.del(erasureKey(event.seq));
        prunedSeqs.push({ seq: event.seq, chainHash: event.chainHash });
        batchSeqMax = Math.max(batchSeqMax, event.seq);
        batchTimeMax = Math.max(batchTimeMax, event.timestamp);
        deleted++;
      }
      if (deleted > 0) {
        await this.#options.beforePruneWrite?.();
        // In the writer's queue, so an erasure never rewrites an entry this batch deletes
        // after it was read here (the rewrite would bring it back without its other keys),
        // and the counts are added to rows no other batch changes meanwhile.
        const written = await this.#openWriter().exclusive(async () => {
          // Every entry still as read, or nothing is written and the batch is read again. A cut
          // of the log since the read (a standby's divergent suffix moved to its outbox and the
          // leader's entries applied at those seqs, an adoption) moved entries read here out:
          // the batch deleted the seq key of the entry now at such a seq, counted a pruned event
          // the cut had taken back (a day's stored count below 0) and recorded the seq as pruned,
          // so nodes catching up from this one were refused at the chain after it. An erasure
          // rewrote one (other values, so other index keys): the batch deleted the index keys of
          // the values read, and the rewritten ones pointed at a deleted entry for good (reviews).
          const valuesNow = await this.#db.getMany(deletedKeys);
          if (valuesNow.some((value, i) => value !== deletedValues[i])) return false;
          // The highest seq deleted or skipped, with the deletes (a crash keeps both or
          // neither), taken here: an apply between the read above and now may have raised it
          // past this batch's seqs, and lowering it would make the log above it look contiguous.
          const gapSeqMax = Math.max(batchSeqMax, this.#gapSeqMax);
          if (gapSeqMax > this.#gapSeqMax) batch.put(localKey(GAP_SEQ_MAX), String(gapSeqMax));
          // With the deletes, so no event is ever gone without its time counted here.
          const timeMaxRaised = batchTimeMax > (this.#prunedTimeMax ?? Number.NEGATIVE_INFINITY);
          if (timeMaxRaised) batch.put(PRUNED_TIME_MAX_KEY, String(batchTimeMax));
          // The newest checkpoint deleted so far keeps its index entry; the others' go. Decided
          // here, in the writer's queue, where no cut of the log can come in between.
          // The ranges too: an applied batch may have added ranges the sender deleted meanwhile.
          const pruned = new PrunedRanges(this.#pruned.all);
          for (const { seq, chainHash } of prunedSeqs) pruned.add(seq, chainHash);
          putPrunedRangeOps(batch, prunedRangeOps(this.#pruned.all, pruned.all));
          let prunedCheckpointSeq = this.#prunedCheckpointSeq;
          for (const seq of checkpointSeqs) {
            if (prunedCheckpointSeq === undefined || seq > prunedCheckpointSeq) {
              if (prunedCheckpointSeq !== undefined) batch.del(checkpointKey(prunedCheckpointSeq));
              prunedCheckpointSeq = seq;
            } else batch.del(checkpointKey(seq));
          }
          if (prunedCheckpointSeq !== this.#prunedCheckpointSeq) batch.put(PRUNED_CHECKPOINT_KEY, String(prunedCheckpointSeq));
          // The ids of the tiered events deleted, with their times, so a re-send is looked for in
          // the tier at the original's time (pruned-ids.ts). Tiered: counted as tiered, which
          // retention's policy does with the tier's watermark before every prune; a node that
          // never tiered counts nothing, and remembers nothing a tier could be asked about. An id
          // deleted twice (two copies) keeps the time of the copy deleted last: both are tiered.
          // One whose event is past the time ids are kept (old history imported) is not kept.
          const remembered: string[] = [];
          for (const event of idsHeld) {
            if (event.seq > this.#tieredCountedThrough || !this.#prunedIds.keeps(event.timestamp)) continue;
            this.#prunedIds.put(batch, event.eventId, event.timestamp);
            remembered.push(event.eventId);
          }
          // Side by side: both are reads, on LevelDB's threads, while the writer waits.
          await Promise.all([deleteIdKeysOf(this.#db, batch, idsHeld), days.prepare()]);
          days.putChanged(batch);
          // Before the deletes: a pull or a sweep must not be served an entry the log no longer
          // has. Only the writer adds to the tail, and it waits for this turn; entries after the
          // newest deleted one stay (a prune of old events leaves the newest entries).
          this.#tail.dropThrough(batchSeqMax);
          await batch.write({ sync: false });
          days.commit();
          this.#prunedCheckpointSeq = prunedCheckpointSeq;
          this.#pruned = pruned;
          this.#gapSeqMax = gapSeqMax;
          if (timeMaxRaised) this.#prunedTimeMax = batchTimeMax;
          this.#prunedIds.added(remembered);
          // Last, still in the writer's turn: an append that reads this version also reads the
          // newest deleted time that goes with it, and one queued after this turn sees both.
          this.#deleteVersion++;
          return true;
        });
        if (!written) {
          await batch.close();
          from = batchFrom;
          // Yielded to ingest and asked whether to go on, as after a batch: a long erasure pass
          // rewriting entries in this range made every read stale and the prune spin (review).
          if (!(await between())) return result;
          continue;
        }
        // Queued behind the writer, not awaited: dropping a sketch only saves reads later, and
        // a prune must not wait for the appends ahead of it (it runs beside ingest).
        void this.#dropEmptySketches(touchedBlocks).catch(() => undefined);
        if (prunedTables.full) await this.#dropPrunedTableNames(prunedTables.take());
      } else await batch.close();
      result.deleted += deleted;
      result.batches++;
      if (!(await between())) return result;
    }
  }

  /**
   * Rebuilds the free-text sketches an erasure left holding the erased values' trigrams (every
   * block marked stale, also by an erasure written before a crash), in the writer's queue.
   */
  async #rebuildStaleSketches(): Promise<void> {
    this.#rebuildingSketches ??= (async () => {
      try {
        const text = this.#openText();
        const writer = this.#openWriter();
        // One block per turn of the writer's queue (a block is 4,096 events to read and hash):
        // an erasure naming thousands of records must not hold every append for minutes.
        while (this.#status === 'open') {
          const rebuilt = await writer.exclusive(async ({ db }) => {
            const batch = db.batch();
            const blocks = await rebuildStaleSketches(db, batch, 1);
            if (blocks.length === 0) {
              // Cleared in the turn that saw none marked: an erasure written after it adds its
              // blocks again and starts the next rebuild; a failure before leaves the trigger set.
              this.#staleSketches.clear();
              await batch.close();
              return false;
            }
            await batch.write({ sync: true });
            // The writer's copy of a block being filled is read again from what was just written.
            for (const block of blocks) {
              text.drop(block);
              this.#staleSketches.delete(block);
            }
            return true;
          });
          if (!rebuilt) break;
        }
      } finally {
        this.#rebuildingSketches = undefined;
      }
    })();
    await this.#rebuildingSketches;
  }

  /**
   * Deletes the free-text sketches of blocks that no longer hold any event. In the writer's
   * queue, so no append can put an event into a block between the check and the delete.
   */
  async #dropEmptySketches(blocks: ReadonlySet<number>): Promise<void> {
    const text = this.#openText();
    await this.#openWriter().exclusive(async ({ db }) => {
      const batch = db.batch();
      for (const block of blocks) {
        const left = await db.keys({ gte: seqKey(block * TEXT_BLOCK_SEQS), lt: seqKey((block + 1) * TEXT_BLOCK_SEQS), limit: 1 }).all();
        if (left.length > 0) continue;
        batch.del(textSketchKey(block));
        text.drop(block);
      }
      if (batch.length > 0) await batch.write({ sync: false });
      else await batch.close();
    });
  }

  /**
   * Counts events before `cutoffMs` with seq > `afterSeq` (held back from deletion), up to `max`.
   * By keys only: a time key ends with the event's seq, so no event is read or parsed. A cutoff
   * before the epoch counts nothing.
   */
  async countHeldBack(cutoffMs: number, afterSeq: number, max: number): Promise<number> {
    let count = 0;
    const seqStart = timeLowerBound(0).length;
    for await (const key of this.#db.keys({ gte: PREFIX.time, lt: timeLowerBound(Math.max(0, cutoffMs)) })) {
      if (decodeUint(key.slice(seqStart)) > afterSeq && ++count >= max) break;
    }
    return count;
  }

  /**
   * Counts log entries with seq > `afterSeq`, exactly (the tiering backlog). Cheap: the part of
   * the log above the highest hole is contiguous and counted by subtraction; only entries at
   * or below it are counted by a scan, kept and narrowed as `afterSeq` grows (the sweep's
   * watermark only grows), so a status read does not scan the backlog.
   */
  async countAfter(afterSeq: number): Promise<number> {
    const lastSeq = this.position.lastSeq;
    if (afterSeq >= lastSeq) return 0;
    const gapSeqMax = Math.min(this.#gapSeqMax, lastSeq);
    const contiguous = lastSeq - Math.max(afterSeq, gapSeqMax);
    if (afterSeq >= gapSeqMax) return contiguous;
    const kept = this.#gapCount;
    const deleteVersion = this.#deleteVersion;
    let count: number;
    if (kept && kept.gapSeqMax === gapSeqMax && kept.deleteVersion === deleteVersion && kept.afterSeq <= afterSeq) {
      count = kept.count - (await this.#countSeqs(kept.afterSeq, afterSeq));
    } else count = await this.#countSeqs(afterSeq, gapSeqMax);
    // Only if nothing was deleted meanwhile; else the next call counts afresh.
    if (this.#deleteVersion === deleteVersion) this.#gapCount = { afterSeq, gapSeqMax, deleteVersion, count };
    return count + contiguous;
  }

  /** Entries with afterSeq < seq ≤ toSeq, by a scan of the seq index. */
  async #countSeqs(afterSeq: number, toSeq: number): Promise<number> {
    let count = 0;
    for await (const _key of this.#db.keys({ gt: seqKey(afterSeq), lte: seqKey(toSeq) })) count++;
    return count;
  }

  /** Reads a replicated-metadata value (settings, watermark, …). */
  async getMeta<T>(name: string): Promise<T | undefined> {
    return this.meta<T>(name);
  }

  /**
   * A replicated-metadata value as last written, without I/O (the store keeps them in memory);
   * a fresh copy each call. What an answer that must stay fast under load reads.
   */
  meta<T>(name: string): T | undefined {
    this.#openWriter();
    const text = this.#metaText.get(name);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  /** Every replicated-metadata value, for replication to standbys. */
  async getAllMeta(): Promise<Record<string, unknown>> {
    this.#openWriter();
    return Object.fromEntries([...this.#metaText].map(([name, text]) => [name, JSON.parse(text) as unknown]));
  }

  /** Writes replicated-metadata values (synced): a leader's own writes, or a standby applying them. */
  async putMeta(values: Record<string, unknown>): Promise<void> {
    this.#openWriter();
    const texts = Object.entries(values).map(([name, value]) => [name, JSON.stringify(value)] as const);
    await this.#db.batch(
      texts.map(([name, text]) => ({ type: 'put' as const, key: metaKey(name), value: text })),
      { sync: true },
    );
    for (const [name, text] of texts) this.#metaText.set(name, text);
    this.#metaVersion++;
  }

  /**
   * Makes the replicated metadata exactly `values` (synced, one batch): what a standby does with
   * its leader's, which replication always sends whole. A name the leader does not hold is
   * deleted: merged instead, a value written into a log that diverged (settings a deposed leader
   * saved that no standby got) stayed in force on that node after it rejoined, and came back
   * into force on every node if it led again.
   */
  async replaceMeta(values: Record<string, unknown>): Promise<void> {
    this.#openWriter();
    const texts = Object.entries(values).map(([name, value]) => [name, JSON.stringify(value)] as const);
    const gone = [...this.#metaText.keys()].filter((name) => !Object.hasOwn(values, name));
    await this.#db.batch(
      [...texts.map(([name, text]) => ({ type: 'put' as const, key: metaKey(name), value: text })), ...gone.map((name) => ({ type: 'del' as const, key: metaKey(name) }))],
      { sync: true },
    );
    for (const name of gone) this.#metaText.delete(name);
    for (const [name, text] of texts) this.#metaText.set(name, text);
    this.#metaVersion++;
  }

  /** Reads a value of this node's own metadata (node id, known term, …). */
  async getLocal<T>(name: string): Promise<T | undefined> {
    this.#openWriter();
    const value = await this.#db.get(localKey(name));
    return value === undefined ? undefined : (JSON.parse(value) as T);
  }

  async putLocal(name: string, value: unknown): Promise<void> {
    this.#openWriter();
    await this.#db.put(localKey(name), JSON.stringify(value), { sync: true });
  }

  /**
   * Records in the completeness ledger the sourceSeqs of events this node received and chose
   * not to store (read sampling dropped them): they arrived, so they are no hole. Durable (one
   * synced batch, in the writer's queue) before it resolves; events without a sourceSeq change
   * nothing. The day ledger is not changed (its `received` counts stored events). Only this
   * node's ledger: the log does not carry them to other nodes.
   */
  async recordReceivedNotStored(events: readonly Pick<EncodedEvent, 'json'>[]): Promise<void> {
    const withSeq = events.filter((event) => event.json.includes(SOURCE_SEQ_KEY));
    if (withSeq.length === 0) return;
    await this.#openWriter().exclusive(async ({ db }) => {
      const ledger = this.#ledger.begin();
      for (const event of withSeq) ledger.addJson(event.json);
      const batch = db.batch();
      ledger.putChanged(batch);
      await batch.write({ sync: true });
      ledger.commit();
    });
  }

  /**
   * The completeness ledger: per source (sourceId), the sourceSeqs this log received — the
   * highest reached without a hole and the holes as ranges; only one source with `sourceId`,
   * only each source's newest `gapsMax` holes with it.
   */
  sourceLedger(sourceId?: string, gapsMax?: number): SourceLedgerEntry[] {
    this.#openWriter();
    return this.#ledger.entries(sourceId, gapsMax);
  }

  /**
   * One page of the completeness ledger: up to `limit` sources by sourceId, after `after` (from
   * the first without it), each with its newest `gapsMax` holes; `next` is the `after` of the
   * following page, null on the last.
   */
  sourceLedgerPage(options: { after?: string; limit: number; gapsMax: number }): SourceLedgerPage {
    this.#openWriter();
    return this.#ledger.page(options);
  }

  /** Ranges the completeness ledger holds in memory over all sources (at most LEDGER_RANGES_MAX). */
  sourceLedgerRanges(): number {
    this.#openWriter();
    return this.#ledger.rangeCount;
  }

  /**
   * The completeness ledger summed up — sources tracked, those with holes, sourceSeqs missing,
   * events of the sources past the tracked ones — kept as events arrive, so reading it builds
   * no entry (a /metrics scrape reads it).
   */
  sourceLedgerSummary(): SourceLedgerSummary {
    this.#openWriter();
    return this.#ledger.summary();
  }

  /**
   * The completeness ledger's counts per day and source: received, stored, tiered and pruned
   * (day-ledger.ts). `tiered` is as of the last countTieredThrough.
   */
  async dayLedger(filter: DayLedgerFilter = {}): Promise<DayLedgerRow[]> {
    this.#openWriter();
    return this.#days.rows(filter);
  }

  /** Up to `limit` of those rows after the position `after` (the `next` of the page before). */
  async dayLedgerPage(filter: DayLedgerFilter, page: { after?: string; limit: number }): Promise<DayLedgerPage> {
    this.#openWriter();
    return this.#days.page(filter, page);
  }

  /**
   * Every received event with a seq up to this is counted as tiered (countTieredThrough): what
   * retention may delete under a tier's watermark, so each deleted event is counted tiered in
   * the ledger and its id kept (pruned-ids.ts) — a standby may know a watermark past its log's end.
   */
  get tieredCountedThrough(): number {
    return this.#tieredCountedThrough;
  }

  /**
   * Counts as tiered every event of this log with a seq up to `seq` (the tiering watermark this
   * node knows) not counted yet, in batches in the writer's queue. Called before every prune
   * (which deletes only tiered events, or untiered ones once tiering is off): an event is
   * counted before it can be deleted. A watermark never goes back, so neither does this.
   * `holding`: counting goes on only while the log still holds this entry (#stillHolds), checked
   * in each batch's own turn, so a log cut queued between two batches stops it before it counts
   * the entries the cut put in place of the tiered ones.
   */
  async countTieredThrough(seq: number, holding?: StoredEvent): Promise<void> {
    const writer = this.#openWriter();
    for (;;) {
      if (this.#status !== 'open') return;
      const counted = await writer.exclusive(async ({ db, position }) => {
        if (holding !== undefined && !(await this.#stillHolds(holding))) return false;
        // Not past the log's end: a standby may know a watermark beyond what it has applied,
        // and those entries are counted when they are here.
        const target = Math.min(seq, position.lastSeq);
        const from = this.#tieredCountedThrough;
        if (from >= target) return false;
        const entries = await this.readEncodedBySeq(from, TIERED_COUNT_BATCH_EVENTS);
        const days = this.#days.begin();
        let through = from;
        // Whether the entries read reach past the target or the log's end: then every entry up
        // to the target was seen (the seqs in between that have none were pruned or skipped).
        let coversSeq = entries.length < TIERED_COUNT_BATCH_EVENTS;
        for (const bytes of entries) {
          const entry = readReplicatedEntry(bytes);
          if (entry.seq > target) {
            coversSeq = true;
            break;
          }
          days.countJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), entry.timestamp, 'tiered');
          through = entry.seq;
        }
        if (coversSeq) through = target;
        await this.#writeTieredCount(db, days, through);
        return true;
      });
      if (!counted) return;
    }
  }

  /**
   * Counts as tiered the events of a batch the sweep just committed, from the events it read,
   * instead of reading them back from the log as countTieredThrough does: that read-back was a
   * second read and parse of every tiered event on the leader's event loop (about 5% of its
   * time while a backlog drains). Taken only when the batch continues where counting stands, is
   * still this log's (#stillHolds its last entry), and none of its entries can have been pruned
   * since it was read (no seq from its first on was ever pruned or skipped: retention deletes
   * only tiered events, below a batch in flight, unless tiering was switched off meanwhile).
   * Otherwise nothing is counted here and countTieredThrough reads them, as before every prune.
   */
  async countTieredBatch(events: readonly StoredEvent[]): Promise<void> {
    const first = events[0];
    const last = events.at(-1);
    if (first === undefined || last === undefined) return;
    const writer = this.#openWriter();
    // Entries before the batch not counted yet (after a restart, say) are read as always, while
    // the batch is known to be this log's: a batch read before a log cut must not have the
    // entries now under those seqs counted for it (checked in every turn that counts).
    if (first.seq - 1 > this.#tieredCountedThrough) await this.countTieredThrough(first.seq - 1, last);
    await writer.exclusive(async ({ db, position }) => {
      if (this.#status !== 'open') return;
      const from = this.#tieredCountedThrough;
      if (from >= last.seq || from < first.seq - 1 || position.lastSeq < last.seq || this.#gapSeqMax >= first.seq) return;
      if (!(await this.#stillHolds(last))) return;
      const days = this.#days.begin();
      for (const event of events) if (event.seq > from) days.count(event, 'tiered');
      await this.#writeTieredCount(db, days, last.seq);
    });
  }

  /**
   * Whether the log holds `event` where it was read: the same seq, term, eventId, ingestTs and
   * chain hash. A log cut since orders other entries under those seqs; the same term and even
   * the same event can come again there (a term can be handed out twice, a single node's is
   * always 0, a re-sent event lands again), but not with the same chain hash, which commits to
   * every entry up to it (nor, with the chain off, with the same ingestTs unless in the same
   * millisecond).
   */
  async #stillHolds(event: StoredEvent): Promise<boolean> {
    const held = await this.getBySeq(event.seq);
    return held !== undefined && held.term === event.term && held.eventId === event.eventId && held.ingestTs === event.ingestTs && held.chainHash === event.chainHash;
  }

  /** Writes tiered counts made in the writer's queue, with where counting now stands. */
  async #writeTieredCount(db: Level<string, string>, days: DayLedgerChange, through: number): Promise<void> {
    const batch = db.batch();
    await days.prepare();
    days.putChanged(batch);
    batch.put(TIERED_COUNTED_THROUGH_KEY, String(through));
    await batch.write({ sync: false });
    days.commit();
    this.#tieredCountedThrough = through;
  }

  /** Where the record chain stands: the last entry's seq and chain hash (docs/integrity.md). */
  get chainHead(): { seq: number; chainHash: string; started: boolean } {
    const head = (this.#chain as RecordChain).head;
    return { seq: this.position.lastSeq, chainHash: head.hash, started: head.started };
  }

  /** True when this store keeps the record chain. */
  get chainEnabled(): boolean {
    return (this.#chain as RecordChain).enabled;
  }

  /** The seq ranges retention deleted from this store, each with the chain hash at its end. */
  get prunedRanges(): readonly PrunedRange[] {
    return this.#pruned.all;
  }

  /**
   * Seqs of the erasure records (`audit:EraseFields`) this store holds with seq in
   * (afterSeq, throughSeq], ascending: read from their index, not from the log. With `limit`,
   * only the first that many.
   */
  async erasureRecordSeqs(afterSeq: number, throughSeq: number, limit?: number): Promise<number[]> {
    this.#openWriter();
    if (throughSeq <= afterSeq) return [];
    const keys = await this.#db.keys({ gt: erasureKey(afterSeq), lte: erasureKey(throughSeq), ...(limit === undefined ? {} : { limit }) }).all();
    return keys.map((key) => decodeUint(key.slice(PREFIX.erasure.length)));
  }

  /**
   * The checkpoint records of the log (their seq and signed checkpoint text), newest last;
   * with `limit`, only the newest that many. Those retention deleted are not listed, but for
   * the newest of them: the log's newest checkpoint is listed however much retention deleted,
   * so the next one continues its chain.
   */
  async checkpoints(limit = Number.MAX_SAFE_INTEGER): Promise<Array<{ seq: number; checkpoint: string }>> {
    this.#openWriter();
    const entries = await this.#db.iterator({ gte: PREFIX.checkpoint, lt: prefixEnd(PREFIX.checkpoint), reverse: true, limit: Math.min(limit, 1_000_000) }).all();
    return entries.reverse().map(([key, checkpoint]) => ({ seq: decodeUint(key.slice(PREFIX.checkpoint.length)), checkpoint }));
  }

  /** The public keys the log registered, by key id, with the seq of each registration. */
  async registeredKeys(): Promise<Map<string, RegisteredKey>> {
    this.#openWriter();
    const entries = await this.#db.iterator({ gte: PREFIX.key, lt: prefixEnd(PREFIX.key) }).all();
    return new Map(entries.map(([key, value]) => [key.slice(PREFIX.key.length), JSON.parse(value) as RegisteredKey]));
  }

  /**
   * LevelDB's own estimate of the memory it holds (`leveldb.approximate-memory-usage`): its
   * memtables, including older ones an open iterator or snapshot still pins, and its block cache.
   */
  leveldbMemoryBytes(): number {
    this.#openWriter();
    // `level` is classic-level on Node, which has getProperty; its type is declared for browsers too.
    return Number((this.#db as unknown as { getProperty(property: string): string }).getProperty('leveldb.approximate-memory-usage'));
  }

  /** Bytes of the LevelDB files on disk (tables, logs, manifest). */
  async sizeOnDiskBytes(): Promise<number> {
    const names = await readdir(this.location);
    const sizes = await Promise.all(names.map((name) => stat(join(this.location, name)).then((s) => s.size, () => 0)));
    return sizes.reduce((a, b) => a + b, 0);
  }

  /** Waits for queued writes, then closes LevelDB. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#status = 'closing';
      // The scan filling the pruned ids' filter stops after the page it reads, closing its iterator.
      await this.#prunedIds?.close();
      // A sketch rebuild stops after the turn it is in.
      await this.#rebuildingSketches?.catch(() => undefined);
      await this.#writer?.flush();
      await this.#db.close();
      this.#status = 'closed';
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * The events of stored `values` that `matches` takes; `textEvents`: as StoredEventText (parsed
 * only when a field beyond their place in the order and userId is read), else parsed, each with
 * its stored text kept for storedJsonOf.
 */
function matchingEvents(values: readonly string[], matches: (event: StoredEvent) => boolean, textEvents: boolean): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (const value of values) {
    const text = textEvents ? StoredEventText.of(value)?.asStoredEvent() : undefined;
    const event = text ?? (JSON.parse(value) as StoredEvent);
    if (!matches(event)) continue;
    if (text === undefined) storedJson.set(event, value);
    events.push(event);
  }
  return events;
}

/**
 * Sorts events whose eventId was taken into retries and conflicts by content hash, against the
 * event stored under the id (`storedJson`) or else the first one of the request with it
 * (`firsts`); an id with neither (deleted meanwhile) counts as a retry. An event whose time the
 * receiving node set (EncodedEvent.timeAssigned) is compared with the kept event's time in
 * place of its own: a retry of an event sent without `ts` is given another time.
 */
function judgeRepeats(repeated: readonly EncodedEvent[], storedJson: ReadonlyMap<string, string>, firsts: ReadonlyMap<string, EncodedEvent> | undefined): Pick<AppendResult, 'duplicates' | 'conflicts'> {
  const kept = new Map<string, ContentReference | undefined>();
  const conflicts: EventIdConflict[] = [];
  let duplicates = 0;
  for (const event of repeated) {
    let reference = kept.get(event.eventId);
    if (reference === undefined && !kept.has(event.eventId)) {
      const json = storedJson.get(event.eventId);
      const first = firsts?.get(event.eventId);
      if (json !== undefined) reference = storedContentReference(json);
      else if (first !== undefined) reference = encodedContentReference(first);
      kept.set(event.eventId, reference);
    }
    if (reference === undefined) {
      duplicates++;
      continue;
    }
    const refusedHash = contentHashAgainst(event.json, reference);
    if (refusedHash === reference.hash) duplicates++;
    else if (event.timeAssigned === true && event.timestamp !== reference.timestamp && contentHashAgainst(event.json, reference, reference.timestamp) === reference.hash) duplicates++;
    else conflicts.push({ eventId: event.eventId, storedHash: reference.hash, refusedHash });
  }
  return { duplicates, conflicts };
}


/** A key registration the log's key index holds (`keyKey`), or undefined. */
async function registeredKey(db: Pick<Level<string, string>, 'get'>, keyId: string): Promise<RegisteredKey | undefined> {
  const kept = await db.get(keyKey(keyId));
  return kept === undefined ? undefined : (JSON.parse(kept) as RegisteredKey);
}

/** The entry with `seq` among entries in ascending seq order (a binary search), or undefined. */
function entryWithSeq(entries: readonly ReplicatedEntry[], seq: number): ReplicatedEntry | undefined {
  let lo = 0;
  let hi = entries.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = (entries[mid] as ReplicatedEntry).seq;
    if (at === seq) return entries[mid];
    if (at < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/**
 * Deletes the id key of each event a prune or a cut deletes, only where it still points at
 * that event (`suffix`, its time key less the prefix): one eventId can be held at two seqs (a
 * copy re-sent after the first was tiered and deleted on the leader, applied on a standby that
 * still holds the first, recordOtherCopies). Where the key points at a deleted copy and
 * another is still held, the key moves to it (the one with the highest seq); the other copies'
 * list loses the deleted ones. Run in the writer's turn, so no append moves a key in between.
 */
async function deleteIdKeysOf(db: Level<string, string>, batch: { put(key: string, value: string): unknown; del(key: string): unknown }, events: ReadonlyArray<{ eventId: string; suffix: string }>): Promise<void> {
  if (events.length === 0) return;
  const values = await db.getMany(events.flatMap((event) => [idKey(event.eventId), copiesKey(event.eventId)]));
  const byId = new Map<string, { pointer: string | undefined; copies: string[] | undefined; deleted: Set<string> }>();
  events.forEach((event, i) => {
    let held = byId.get(event.eventId);
    if (held === undefined) {
      const copies = values[2 * i + 1];
      held = { pointer: values[2 * i], copies: copies === undefined ? undefined : (JSON.parse(copies) as string[]), deleted: new Set() };
      byId.set(event.eventId, held);
    }
    held.deleted.add(event.suffix);
  });
  for (const [eventId, { pointer, copies, deleted }] of byId) {
    let others = copies?.filter((suffix) => !deleted.has(suffix)) ?? [];
    if (pointer !== undefined && deleted.has(pointer)) {
      const next = others.reduce<string | undefined>((best, suffix) => (best === undefined || seqOfSuffix(suffix) > seqOfSuffix(best) ? suffix : best), undefined);
      if (next === undefined) batch.del(idKey(eventId));
      else {
        batch.put(idKey(eventId), next);
        others = others.filter((suffix) => suffix !== next);
      }
    }
    if (copies === undefined) continue;
    if (others.length === 0) batch.del(copiesKey(eventId));
    else if (others.length !== copies.length) batch.put(copiesKey(eventId), JSON.stringify(others));
  }
}

/**
 * Records, for each applied entry whose eventId the log already holds at another seq (the
 * leader stored a re-send after deleting its first copy, while this node still holds the
 * first), the copy its id key pointed at under copiesKey: the key now points at the new copy,
 * and when a prune or a cut deletes that one, it moves back (deleteIdKeysOf). One read of the
 * entries' id keys per applied batch, before the batch's own puts are written.
 */
async function recordOtherCopies(db: Level<string, string>, batch: { put(key: string, value: string): unknown }, entries: readonly ReplicatedEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const held = await db.getMany(entries.map((entry) => idKey(entry.eventId)));
  const latest = new Map<string, string>();
  const others = new Map<string, string[]>();
  entries.forEach((entry, i) => {
    const suffix = timeKeySuffix(entry.timestamp, entry.seq);
    const before = latest.get(entry.eventId) ?? held[i];
    latest.set(entry.eventId, suffix);
    if (before === undefined || before === suffix) return;
    const list = others.get(entry.eventId) ?? [];
    list.push(before);
    others.set(entry.eventId, list);
  });
  for (const [eventId, suffixes] of others) {
    const recorded = await db.get(copiesKey(eventId));
    const list = [...new Set([...(recorded === undefined ? [] : (JSON.parse(recorded) as string[])), ...suffixes])];
    batch.put(copiesKey(eventId), JSON.stringify(list));
  }
}

/** Names collected before they are checked, by count and by their UTF-8 bytes (a name may be 4 KiB). */
const PRUNED_TABLES_CHECK_NAMES = 10_000;
const PRUNED_TABLES_CHECK_BYTES = 4 * 1024 * 1024;

/** The distinct table names a prune's deleted events named, until checked. */
class PrunedTableNames {
  #names = new Set<string>();
  #bytes = 0;

  add(name: string): void {
    if (this.#names.has(name)) return;
    this.#names.add(name);
    this.#bytes += Buffer.byteLength(name, 'utf8');
  }

  get size(): number {
    return this.#names.size;
  }

  /** True when the names should be checked now rather than at the end of the prune. */
  get full(): boolean {
    return this.#names.size >= PRUNED_TABLES_CHECK_NAMES || this.#bytes >= PRUNED_TABLES_CHECK_BYTES;
  }

  /** The names collected, which are forgotten here. */
  take(): string[] {
    const names = [...this.#names];
    this.#names = new Set();
    this.#bytes = 0;
    return names;
  }
}

/** Outbox keys read at once while the outbox is counted at open. */
const OUTBOX_COUNT_CHUNK = 10_000;

/**
 * How many entries the outbox holds, and its first and last keys, read a chunk of keys at a
 * time: read whole, a standby cut off from its leader for a day at 1,000 events/s held 86
 * million keys in memory at its next start (year-of-operation review). Deletions need not be
 * at the front (forwards finish out of order), so the count is of the keys, not last − first.
 */
async function countOutbox(db: Level<string, string>): Promise<{ count: number; firstKey: string | undefined; lastKey: string | undefined }> {
  let count = 0;
  let firstKey: string | undefined;
  let lastKey: string | undefined;
  let from: string = PREFIX.outbox;
  for (;;) {
    const keys = await db.keys({ gte: from, lt: prefixEnd(PREFIX.outbox), limit: OUTBOX_COUNT_CHUNK }).all();
    if (keys.length === 0) break;
    firstKey ??= keys[0];
    lastKey = keys[keys.length - 1];
    count += keys.length;
    from = `${lastKey}\u0000`;
  }
  return { count, firstKey, lastKey };
}
