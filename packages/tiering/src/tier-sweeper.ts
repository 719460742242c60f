import { AuditError, AuditErrorCode, type EffectiveSettings, type EncodedEvent, type IcebergCatalogConfig, type StoredEvent } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import {
  TIERED_LOCATIONS_META,
  TIER_SEGMENTS_CUT_META,
  TIER_SEGMENTS_META,
  recordTieredLocation,
  includesPlace,
  readTieredLocations,
  readTierSegments,
  readTierSegmentsCut,
  segmentsAfterCommit,
  WATERMARK_META,
  WATERMARK_TERM_META,
  ZERO_WATERMARK,
  commitIcebergBatch,
  commitParquetBatch,
  encodeIcebergBatch,
  advanceVersionHint,
  ensureIcebergTable,
  ensureNamespace,
  expireOverdueSnapshots,
  rewriteManifestsIfMany,
  laterWatermark,
  parseS3Location,
  type S3Location,
  probeConditionalCreate,
  parquetLogEnd,
  resolveIcebergTable,
  tableWatermark,
  watermarkFromLiveFiles,
  erasuresAppliedThrough,
  type IcebergTableRef,
  type LoadedTable,
  writeIntegrityObjects,
  type S3Connections,
  type ObjectStore,
  type TieredLocation,
  type TierFileEncoder,
  pendingParquetErasures,
  ParquetLogCache,
  PARQUET_CHECKPOINT_INTERVAL_MARKERS,
  writeParquetCheckpoint,
  deleteSupersededLogCheckpoints,
  storeNowAt,
  SEQS_AFTER_FOOTERS_MAX,
  type MaintenanceContext,
  type MaintenanceStep,
  type ParquetCompactionContext,
  type Watermark,
  type EncodedIcebergBatch,
  INLINE_TIER_FILE_ENCODER,
  IcebergTierSource,
  ParquetTierSource,
  type TierSource,
  loadIcebergTable,
  newestIcebergRow,
  newestParquetRow,
  parquetSeqsAfter,
  icebergSeqsAfter,
  type NewestTieredRow,
  tieredLocationKey,
} from '@auditlake/lake';
import { adoptTierSuffix, TIER_ADOPTION_ENTRIES_MAX, TierTermNotBefore, type TierAdoption } from './tier-log-adoption.js';

/** What an admin's adoption took into the log, and from which target through which watermark seq. */
export type AdoptedTier = TierAdoption & { target: string; throughSeq: number };
import { eligibleCount, pickBatch } from './batch-picker.js';
import { applyIcebergErasures, applyParquetErasures, isErasureRecord, type TierErasureResult } from './tier-erasure.js';
import { CommitLock } from './commit-lock.js';
import { EarlierTargetErasure } from './earlier-target-erasure.js';
import { ERASURES_APPLIED_META, tierErasuresAppliedThrough } from './erasure-retention.js';
import { TermScopedSet } from './term-scoped-set.js';
import { seenAt } from './seen-maps.js';

/**
 * The largest term an adoption takes in from a tier's rows (TierSweeperOptions.learnTerm): far
 * above any a cluster reaches (a term per election). Rows beyond it were not written by a
 * leader, and are refused here with words that say so, whatever bound learnTerm itself keeps
 * (a cluster's refuses a term far above the ones it knows, LeaderElector.observeMessageTerm).
 */
export const TIER_TERM_LEARN_MAX = 2 ** 32;

export interface TierSweeperOptions {
  store: AuditStore;
  connections: S3Connections;
  catalogs: ReadonlyMap<string, IcebergCatalogConfig>;
  settings: () => EffectiveSettings;
  /** True while this node leads with a valid lease; the term its commits carry. */
  isLeader: () => boolean;
  term: () => number;
  intervalMs: number;
  batchSizeMax: number;
  settleMs: number;
  /**
   * The highest seq every standby this leader hears from holds (undefined: no bound, a node
   * without standbys). Entries past it wait: a successor must hold every entry the tier holds,
   * else it would number its own entries with seqs already tiered (see #checkWatermarkInLog).
   */
  heldThrough?: () => number | undefined;
  /** The most entries one adoption of the tier's suffix may read (default TIER_ADOPTION_ENTRIES_MAX; tests set it low). */
  adoptEntriesMax?: number;
  /** The most seqs read from a location to record as tier segments when the watermark is taken from it (default RECOVERED_SEGMENT_SEQS_MAX; tests set it low). */
  recoveredSegmentSeqsMax?: number;
  /**
   * A cluster's: takes a term above every term handed out, for the record an adoption orders
   * after the tier's entries (AdoptionRecord), asked only while this node leads. Without it (a
   * node without standbys) the record carries the leader's term.
   */
  reserveTerm?: () => Promise<number>;
  /**
   * A cluster's: takes in a term the tier holds rows of, at or above this leader's (terms
   * handed out again after the coordinator lost its data, by a node that had lost its own): the
   * next leader's term is then above it, and an adoption can take those rows. Steps down when
   * leading in a term not above it.
   */
  learnTerm?: (term: number) => Promise<void>;
  /** A node without a coordinator: an adoption takes the tier's rows of its own term (AdoptOptions.soleWriter). */
  soleWriter?: boolean;
  backoffInitialMs: number;
  backoffMaxMs: number;
  now?: () => number;
  /**
   * The clock this sweeper's snapshot sightings are on (default `performance.now()`): the expiry
   * between runs keeps a snapshot it has seen for less than the replaced-file grace, whatever the
   * wall clock says (a step forward, or a failover to a node whose clock is ahead).
   */
  monotonicMs?: () => number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Told of each committed batch: its events and the bytes of its files. */
  onTiered?: (batch: readonly StoredEvent[], bytes: number) => void;
  /** Called once per failed sweep (a metric counts them). */
  onFailed?: () => void;
  /** Debug/test hook run after the data files are written and before the commit marker. */
  beforeCommit?: () => void;
  /** Shared with table maintenance, so the two never commit at once in this process. */
  commitLock?: CommitLock;
  /** Manifests a table's current snapshot may name before a sweep merges them (default MANIFESTS_BETWEEN_RUNS_MAX; tests set it low). */
  manifestsBetweenRunsMax?: number;
  /** Encodes the data files; a node passes its worker pool, so encoding does not block ingest (default: on this thread). */
  encoder?: TierFileEncoder;
  /** Debug/test hook at the points of an erasure's row rewrite (the crash tests kill the process there). */
  onStep?: (step: MaintenanceStep) => void | Promise<void>;
  /** Parquet mode: commits between two checkpoint tries of the log (default PARQUET_CHECKPOINT_INTERVAL_MARKERS; tests set fewer). */
  parquetCheckpointEveryCommits?: number;
  /**
   * Parquet mode with maintenance off: superseded log checkpoints are aged by the object store's
   * clock too (as MaintenanceSchedulerOptions.storeClock; `offsetMs` moves it in tests). Absent:
   * by `now` alone.
   */
  storeClock?: { offsetMs: number };
  /** Called after each pass that applied erasure records to the tier. */
  onErased?: (result: TierErasureResult) => void;
}

/** Sweep health as `tierStatus` reports it (reference fields first, then ours). */
export interface TierStatus {
  mode: string;
  lastSuccessMs: number;
  lastFailureMs: number;
  lastError: string | null;
  retainLocalDays: number;
  watermark: Watermark;
  nextAttemptMs: number;
  consecutiveFailures: number;
  lastBatch: { count: number; bytes: number; ms: number } | null;
}

/** The most seqs read from a location whose watermark is taken past the stored one, to record as its tier segments. */
const RECOVERED_SEGMENT_SEQS_MAX = TIER_ADOPTION_ENTRIES_MAX;

/** A location a watermark is taken from, which holds rows, and the seqs it holds in a range (for its tier segments). */
interface HoldingLocation {
  location: TieredLocation;
  /** Undefined once more than `seqsMax` are found. */
  seqsAfter: (afterSeq: number, throughSeq: number, seqsMax: number) => Promise<number[] | undefined>;
}

/** The next batch, and whether settled events remain after it (then the sweep goes on at once). */
interface NextBatch {
  batch: StoredEvent[];
  settledLeft: boolean;
}

/**
 * A batch after the one committing, read and handed to the encoder before that commit ends,
 * so a backlog's next encodings overlap this commit's requests. Only a hint: a sweep uses it
 * when it continues from exactly `afterSeq` at the same target in the same term, else drops it.
 */
interface Prefetch {
  target: string;
  afterSeq: number;
  next: Promise<NextBatch>;
  encoded: Promise<EncodedIcebergBatch | undefined>;
  /** The batch after this one, read as soon as this one was (see READ_AHEAD_BATCHES). */
  following?: Prefetch;
}

/**
 * Batches of a backlog read and queued for encoding ahead of the one committing. One was not
 * enough: the next batch was read only when the previous commit ended, and the encoder (the
 * busiest thread of a catch-up) waited for that read every time. With two, the encoder has the
 * next batch in hand when it finishes one.
 */
const READ_AHEAD_BATCHES = 2;

/**
 * What one `sweep()` did. `tiered-full`: it committed a batch cut by the size limit, so settled
 * events are waiting and the next commit follows at once; `tiered`: it committed all that was settled.
 */
export type SweepOutcome = 'idle' | 'not-leader' | 'nothing-to-tier' | 'tiered' | 'tiered-full' | 'failed';

/**
 * The leader-only tiering sweep. `batchSizeMax` bounds one commit, not the throughput: a sweep
 * that commits a whole batch is followed at once by the next, until less than a batch is
 * settled; then the next sweep comes after `intervalMs` (after a failure, after a backoff that
 * doubles from `backoffInitialMs` to `backoffMaxMs`). Between two commits the sweeper yields
 * to the event loop, so lease renewals, maintenance, searches and `close()` interleave with a
 * long catch-up. The watermark is replicated and also written into each commit; the first sweep
 * of a term recovers the later of the two, so a leader change never tiers an event twice.
 */
export class TierSweeper {
  readonly #options: TierSweeperOptions;
  readonly #now: () => number;
  readonly #lock: CommitLock;
  readonly #earlierTargets: EarlierTargetErasure;
  /** Per Iceberg table location: when this process first saw each of its snapshots (TierSweeperOptions.monotonicMs). */
  readonly #snapshotsSeen = new Map<string, Map<number, number>>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<SweepOutcome> | undefined;
  #recoveredFor: string | undefined;
  #prefetch: Prefetch | undefined;
  /** Moves whenever what was read ahead is dropped, so a read-ahead still in flight then starts no further one. */
  #prefetchEpoch = 0;
  /** Parquet mode: seqs of committed erasure records not yet applied to the location's rows. */
  #parquetErasuresPending: number[] = [];
  /**
   * Parquet mode: the target's commit markers read so far (by connection and path), so a term's
   * first sweep and the erasure passes fetch only the markers new since (markers never change).
   */
  #parquetLog: { target: string; cache: ParquetLogCache } | undefined;
  /**
   * Parquet mode: commits since this sweeper last tried a checkpoint of the log, and the try
   * under way, which no sweep waits for (maintenance tries too, at each run).
   */
  #commitsSinceCheckpoint = 0;
  #checkpointing: Promise<void> | undefined;
  /** Set by each successful sweep: the log seq through which the current target has applied every erasure record. */
  #currentErasuresApplied = 0;
  /** Targets (connection, location) whose store was found to honour conditional create in this term. */
  readonly #probed = new TermScopedSet();
  /** Iceberg targets (table, location) whose namespace marker this sweeper has seen or made in this term. */
  readonly #namespaces = new TermScopedSet();
  /**
   * The Iceberg table as this sweeper's last sweep left it when that sweep committed a batch and
   * left more, with that sweep's turn of the commit lock: reused by the next sweep when nobody
   * else took the lock in between (see #currentTable). Dropped by any failure.
   */
  #lastTable: { target: string; turn: number; loaded: LoadedTable } | undefined;
  /** Set by adoptTier for the sweep it runs: the watermark seq through which an admin allowed the log to take the tier's entries. */
  #adoptThrough: number | undefined;
  /** Set by adoptTier with #adoptThrough: builds the adoption's record, ordered in the same write. */
  #adoptRecord: ((adoption: AdoptedTier) => EncodedEvent) | undefined;
  /** What that sweep adopted. */
  #adopted: AdoptedTier | undefined;
  /**
   * Locations (tieredLocationKey) whose newest tiered row this sweeper found to be of this log's
   * history, or that it committed to itself: not checked again (#checkLocationHistory) while
   * this node leads in the same term. A later term checks each once more: another leader may
   * have tiered there meanwhile (a review found a node leading again in the same process skip
   * the check, and its own entries, after a leader between tiered entries it never received).
   */
  readonly #historyChecked = new TermScopedSet();
  /** The term whose leader this node's sweep last vouched for the watermark in (WATERMARK_TERM_META), as far as it knows. */
  #vouchedTerm: number | undefined;
  /** Counts replacements of the sweep schedule, so a replaced one does not go on beside its replacement. */
  #generation = 0;
  #closed = false;
  #status = {
    lastSuccessMs: 0,
    lastFailureMs: 0,
    lastError: null as string | null,
    nextAttemptMs: 0,
    consecutiveFailures: 0,
    lastBatch: null as TierStatus['lastBatch'],
  };

  constructor(options: TierSweeperOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#lock = options.commitLock ?? new CommitLock();
    this.#earlierTargets = new EarlierTargetErasure({
      store: options.store,
      connections: options.connections,
      now: this.#now,
      log: options.log,
      backoffInitialMs: options.backoffInitialMs,
      backoffMaxMs: options.backoffMaxMs,
      ...(options.encoder ? { encoder: options.encoder } : {}),
      ...(options.onStep ? { onStep: options.onStep } : {}),
    });
  }

  /** Schedules the first sweep, after `firstDelayMs` (an interval by default). */
  start(firstDelayMs = this.#options.intervalMs): void {
    this.#schedule(firstDelayMs);
  }

  #schedule(delayMs: number): void {
    if (this.#closed) return;
    const generation = this.#generation;
    this.#status.nextAttemptMs = Math.max(this.#status.nextAttemptMs, this.#now() + delayMs);
    this.#timer = setTimeout(() => {
      void this.sweep().then((outcome) => {
        // Replaced by #sweepSoon meanwhile: that schedule goes on, not this one.
        if (generation === this.#generation) this.#schedule(outcome === 'failed' ? this.#backoffMs() : outcome === 'tiered-full' ? 0 : this.#options.intervalMs);
      });
    }, delayMs);
    this.#timer.unref();
  }

  /** Brings the next scheduled sweep forward to now (a sweeper never started is left alone: its caller sweeps). */
  #sweepSoon(): void {
    if (this.#timer === undefined || this.#closed) return;
    clearTimeout(this.#timer);
    this.#generation++;
    this.#status.nextAttemptMs = 0;
    this.#schedule(0);
  }

  #backoffMs(): number {
    const { backoffInitialMs, backoffMaxMs } = this.#options;
    return Math.min(backoffMaxMs, backoffInitialMs * 2 ** Math.max(0, this.#status.consecutiveFailures - 1));
  }

  async status(): Promise<TierStatus> {
    // One consistent snapshot, taken before any await: a sweep finishing meanwhile must not
    // pair one failure's time with the next failure's count or retry time.
    const settings = this.#options.settings();
    const status = { ...this.#status };
    return {
      mode: settings.tierMode,
      lastSuccessMs: status.lastSuccessMs,
      lastFailureMs: status.lastFailureMs,
      lastError: status.lastError,
      retainLocalDays: settings.tierRetainLocalDays,
      watermark: await this.watermark(),
      nextAttemptMs: status.nextAttemptMs,
      consecutiveFailures: status.consecutiveFailures,
      lastBatch: status.lastBatch,
    };
  }

  /** The replicated watermark (what this node knows was tiered). */
  async watermark(): Promise<Watermark> {
    return (await this.#options.store.getMeta<Watermark>(WATERMARK_META)) ?? ZERO_WATERMARK;
  }

  /** Runs one sweep now (one at a time; a caller arriving during a sweep shares it). */
  sweep(): Promise<SweepOutcome> {
    this.#running ??= this.#lock.run(() => this.#sweepOnce()).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /**
   * Runs a sweep that, where the tier is found to hold entries this log does not (see
   * #checkWatermarkInLog), has the log take them — only when the tier's watermark is
   * `throughSeq`, the seq the admin saw named in tierStatus.lastError. Answers what was adopted
   * (undefined: nothing was; `error` says why when the sweep failed) and how the sweep ended.
   */
  async adoptTier(throughSeq: number, record?: (adoption: AdoptedTier) => EncodedEvent): Promise<{ adopted: AdoptedTier | undefined; outcome: SweepOutcome; error: string | null }> {
    // A sweep under way ends first: the one this starts is the one allowed to adopt.
    await this.#running;
    this.#adoptThrough = throughSeq;
    this.#adoptRecord = record;
    this.#adopted = undefined;
    try {
      const outcome = await this.sweep();
      // The entries the adoption moved are ordered again now: tier them at the next sweep, not after a failure's backoff.
      if (this.#adopted !== undefined) this.#sweepSoon();
      return { adopted: this.#adopted, outcome, error: outcome === 'failed' ? this.#status.lastError : null };
    } finally {
      this.#adoptThrough = undefined;
      this.#adoptRecord = undefined;
      this.#adopted = undefined;
    }
  }

  async #sweepOnce(): Promise<SweepOutcome> {
    const settings = this.#options.settings();
    if (settings.tierMode === 'none') {
      // Nothing is being tiered, so nothing is failing: a failure from before tiering was turned
      // off stayed in tierStatus for as long as it was off (review). lastFailureMs keeps when.
      this.#status.lastError = null;
      this.#status.consecutiveFailures = 0;
      // Tiering is off, but what was tiered is still read: erasures must still reach it.
      if (this.#options.isLeader()) {
        try {
          await this.#eraseInEarlierTargets(settings);
          await this.#recordErasuresApplied(Number.MAX_SAFE_INTEGER);
        } catch (err) {
          this.#options.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'Audit tiering: applying erasures to earlier tier targets failed (the next sweep retries)');
        }
      }
      return 'idle';
    }
    if (!this.#options.isLeader()) return 'not-leader';
    const started = this.#now();
    this.#currentErasuresApplied = 0;
    try {
      const outcome = settings.tierMode === 'iceberg' ? await this.#tierIceberg(settings) : await this.#tierParquet(settings);
      this.#succeeded();
      // An adoption's cut stepped this node down: the next term's first sweep goes on.
      if (outcome === 'not-leader') return outcome;
      await this.#eraseInEarlierTargets(settings);
      await this.#recordErasuresApplied(this.#currentErasuresApplied);
      return outcome;
    } catch (err) {
      // What was read ahead continued a commit that may not have happened: read again.
      this.#dropPrefetch();
      this.#lastTable = undefined;
      this.#status.lastFailureMs = this.#now();
      this.#status.lastError = err instanceof Error ? err.message : String(err);
      this.#status.consecutiveFailures++;
      this.#options.onFailed?.();
      const retryMs = this.#backoffMs();
      // Set with the failure, so a status read in between never pairs it with an old attempt.
      this.#status.nextAttemptMs = this.#status.lastFailureMs + retryMs;
      this.#options.log.warn(
        { err: this.#status.lastError, failures: this.#status.consecutiveFailures, ms: this.#now() - started },
        `Audit tiering sweep failed (retry in ${Math.round(retryMs / 1000)}s); LevelDB keeps collecting: ${this.#status.lastError}`,
      );
      return 'failed';
    }
  }

  /**
   * Records a successful attempt. A commit calls it before it makes its watermark visible: a
   * status read that sees the new watermark must not also see the failure before it.
   */
  #succeeded(): void {
    this.#status.lastSuccessMs = this.#now();
    this.#status.lastError = null;
    this.#status.consecutiveFailures = 0;
  }

  async #tierParquet(settings: EffectiveSettings): Promise<SweepOutcome> {
    const { store, connections } = this.#options;
    const location = parseS3Location(settings.tierParquetPath);
    if (!location) throw new Error(`audit.tier.parquet.path must be s3://bucket/prefix: ${settings.tierParquetPath}`);
    const objects = connections.bucket(settings.tierConnectionId, location.bucket);
    const term = this.#options.term();
    const tiered: TieredLocation = { mode: 'parquet', path: settings.tierParquetPath, connectionId: settings.tierConnectionId };
    const logTarget = `${settings.tierConnectionId}|${settings.tierParquetPath}`;
    if (this.#parquetLog?.target !== logTarget) this.#parquetLog = { target: logTarget, cache: new ParquetLogCache() };
    const log = this.#parquetLog.cache;
    // Before anything is written there (the probe's object included): the location's rows must be this log's history.
    const ahead = await this.#checkLocationHistory(term, tiered, 'audit.tier.parquet.path', async () => newestParquetRow(objects, await log.read(objects, location)));
    await this.#probeOnce(objects, settings.tierConnectionId, location.prefix, term);
    let watermark = await this.watermark();
    // First sweep of this term at this target: the commits themselves may be ahead of the
    // replicated watermark (the old leader crashed after a commit, before replicating it).
    const recoveryKey = `${term}|${settings.tierParquetPath}`;
    const recovering = this.#recoveredFor !== recoveryKey;
    let holding: HoldingLocation | undefined;
    if (recovering) {
      const read = await log.read(objects, location);
      if (read.checkpoint !== undefined || read.markers.length > 0) holding = { location: tiered, seqsAfter: (afterSeq, throughSeq, seqsMax) => parquetSeqsAfter(objects, read, afterSeq, throughSeq, seqsMax) };
      watermark = parquetLogEnd(read, watermark);
    }
    const context: ParquetCompactionContext = {
      objects,
      location,
      fence: this.#fence(term),
      now: this.#now,
      log,
      ...(this.#options.encoder ? { encoder: this.#options.encoder } : {}),
      ...(this.#options.onStep ? { onStep: this.#options.onStep } : {}),
    };
    // Before any erasure pass: the pending records come from this log, which must hold the location's entries.
    await this.#checkWatermarkInLog(watermark, tiered, () => new ParquetTierSource(connections, tiered), ahead);
    if (this.#steppedDownByAdoption()) return 'not-leader';
    if (recovering) {
      // Only once the log is known to hold what the markers say was tiered (or took it, by an
      // adoption): retention deletes up to the stored watermark, on every node it replicates to.
      // Stored before the check, a watermark past this log's own entries had every node delete
      // acknowledged events never tiered, and the check then passed, their seqs deleted (review).
      await store.putMeta(await this.#vouchedAt(watermark, holding));
      // Erasure records committed whose rewrite was not recorded done (a crash in between), and
      // those tiered while this location was an earlier target that a pass could not reach.
      this.#parquetErasuresPending = await pendingParquetErasures({ objects, location, log }, await store.erasureRecordSeqs(0, watermark.seq));
      this.#recoveredFor = recoveryKey;
    } else if (this.#adopted !== undefined) {
      // An adoption just brought erasure records the location committed and may not have applied.
      this.#parquetErasuresPending = await pendingParquetErasures({ objects, location, log }, await store.erasureRecordSeqs(0, watermark.seq));
    }
    await this.#vouchInTerm(watermark);
    await this.#applyParquetErasures(context, settings.tierParquetPath);
    const next = await this.#nextBatch(watermark);
    const { batch } = next;
    if (batch.length === 0) {
      this.#currentErasuresApplied = this.#parquetErasuresAppliedThrough(watermark.seq);
      return 'nothing-to-tier';
    }
    const erasureSeqs = batch.filter(isErasureRecord).map((event) => event.seq);
    const started = this.#now();
    const result = await commitParquetBatch(objects, location, batch, {
      term,
      nowMs: this.#now(),
      afterSeq: watermark.seq,
      erasureSeqs,
      mayCommit: this.#fence(term).mayCommit,
      ...(this.#options.beforeCommit ? { beforeCommit: this.#options.beforeCommit } : {}),
      ...(this.#options.encoder ? { encoder: this.#options.encoder } : {}),
    }).catch((err: unknown) => {
      // Another committer continued from this watermark first: recover again next time, from a
      // fresh read of the log (the cached one missed that commit: packed away while this node
      // followed, it is in no loose listing a later read of the cache makes).
      if (err instanceof AuditError && err.code === AuditErrorCode.OBJECT_EXISTS) {
        this.#recoveredFor = undefined;
        this.#parquetLog = undefined;
      }
      throw err;
    });
    this.#succeeded();
    await this.#remember(term, tiered, result.marker.watermark, { afterSeq: watermark.seq, seqs: batch.map((event) => event.seq) });
    await this.#writeProof(objects, location.prefix, batch, settings.tierParquetPath);
    this.#status.lastBatch = { count: batch.length, bytes: result.bytes, ms: this.#now() - started };
    this.#logTiered(result.marker.files.length, settings.tierParquetPath);
    this.#checkpointSoon(objects, location, term, settings);
    this.#options.onTiered?.(batch, result.bytes);
    // The batch's erasure records are committed: apply them to the location's rows.
    this.#parquetErasuresPending = [...this.#parquetErasuresPending, ...erasureSeqs];
    await this.#applyParquetErasures(context, settings.tierParquetPath);
    this.#currentErasuresApplied = this.#parquetErasuresAppliedThrough(result.marker.watermark.seq);
    return this.#tieredOutcome(next);
  }

  /**
   * Every {@link PARQUET_CHECKPOINT_INTERVAL_MARKERS} commits (`parquetCheckpointEveryCommits`), starts a checkpoint of the Parquet
   * log in the background (one at a time; its own read of the log, so the sweep's is untouched).
   * No sweep waits for it, and its failure only delays the next: the checkpoint is derived data.
   * With maintenance off, the superseded checkpoints are deleted here (as maintenance would, once
   * their successors are older than the orphan age): each lists every live file, so kept for good
   * they grew with the square of the location's age.
   */
  #checkpointSoon(objects: ObjectStore, location: S3Location, term: number, settings: EffectiveSettings): void {
    const every = this.#options.parquetCheckpointEveryCommits ?? PARQUET_CHECKPOINT_INTERVAL_MARKERS;
    if (++this.#commitsSinceCheckpoint < every || this.#checkpointing !== undefined || this.#closed) return;
    this.#commitsSinceCheckpoint = 0;
    const target = settings.tierParquetPath;
    const fence = this.#fence(term);
    this.#checkpointing = writeParquetCheckpoint({ objects, location, fence, now: this.#now }, every)
      .then(async (write) => {
        if (write?.written) this.#options.log.info({ key: write.key, markers: write.markersFolded }, `Audit tiering wrote a checkpoint of the Parquet log at ${target}`);
        if (write?.written && !settings.maintenanceEnabled) await this.#deleteSupersededCheckpoints(objects, location, fence, settings);
      })
      .catch((err: unknown) => {
        this.#options.log.warn({ err }, `Audit tiering could not write a checkpoint of the Parquet log at ${target} (the next try comes after more commits): ${(err as Error).message}`);
      })
      .finally(() => {
        this.#checkpointing = undefined;
      });
  }

  /**
   * Deletes a Parquet location's superseded log checkpoints (maintenance off): fenced by the
   * term and by this sweeper staying open, so a close() waits for the deletes under way, not for
   * a backlog of thousands (a location that had maintenance off for long); the next checkpoint
   * goes on where this stopped. Never fails the checkpoint it follows.
   */
  async #deleteSupersededCheckpoints(objects: ObjectStore, location: S3Location, fence: { term: number; mayCommit: () => boolean }, settings: EffectiveSettings): Promise<void> {
    const open = { term: fence.term, mayCommit: () => !this.#closed && fence.mayCommit() };
    const target = settings.tierParquetPath;
    try {
      const deleted = await deleteSupersededLogCheckpoints({ objects, location, fence: open, now: this.#now, ...storeNowAt(this.#options.storeClock, objects, location.prefix) }, settings.maintenanceOrphanMinAgeMs);
      if (deleted > 0) this.#options.log.info({ deleted }, `Audit tiering deleted ${deleted} superseded checkpoints of the Parquet log at ${target} (maintenance is off)`);
    } catch (err) {
      if (this.#closed) return;
      if (err instanceof AuditError && err.code === AuditErrorCode.NOT_LEADER) {
        this.#options.log.info({ target }, `Audit tiering stopped deleting superseded checkpoints of the Parquet log at ${target}: no longer the leader (the next leader's sweep goes on after its next checkpoint)`);
        return;
      }
      this.#options.log.warn({ err }, `Audit tiering could not delete the superseded checkpoints of the Parquet log at ${target} (maintenance is off; the sweep tries again after its next checkpoint): ${(err as Error).message}`);
    }
  }

  /** Through which seq a Parquet location tiered through `watermarkSeq` has applied every erasure record: short of the first still pending. */
  #parquetErasuresAppliedThrough(watermarkSeq: number): number {
    const pending = this.#parquetErasuresPending;
    return pending.length === 0 ? watermarkSeq : Math.min(watermarkSeq, Math.min(...pending) - 1);
  }

  /** Applies the pending erasure records to a Parquet location (kept pending when it fails: the sweep fails and retries). */
  async #applyParquetErasures(context: ParquetCompactionContext, target: string): Promise<void> {
    const pending = this.#parquetErasuresPending;
    if (pending.length === 0) return;
    const result = await applyParquetErasures(context, this.#options.store, pending);
    this.#parquetErasuresPending = this.#parquetErasuresPending.filter((seq) => !pending.includes(seq));
    if (result.missing.length > 0) {
      this.#options.log.warn({ missing: result.missing, target }, `Audit tiering: erasure records at seq ${result.missing.join(', ')} are no longer in the local store; their rows in ${target} were not rewritten`);
    }
    this.#options.log.info(
      { erasures: result.erasures, filesRewritten: result.filesRewritten, rowsRewritten: result.rowsRewritten, filesDeleted: result.filesDeleted, target },
      `Audit tiering: ${result.erasures} erasure ${result.erasures === 1 ? 'record' : 'records'} applied to ${target} (${result.rowsRewritten} rows in ${result.filesRewritten} files rewritten, ${result.filesDeleted} files deleted)`,
    );
  }

  /**
   * A batch cut by the size limit leaves settled events behind: go on at once. The batch need
   * not be full for that — a same-millisecond group that did not fit waits for the next batch.
   */
  #tieredOutcome(next: NextBatch): SweepOutcome {
    return next.settledLeft ? 'tiered-full' : 'tiered';
  }

  /** One line per sweep that tiered something: an operator sees tiering work without asking. */
  #logTiered(files: number, target: string): void {
    const batch = this.#status.lastBatch;
    if (batch === null) return;
    this.#options.log.info({ events: batch.count, files, bytes: batch.bytes, ms: batch.ms, target }, `Audit tiering sweep: ${batch.count} ${batch.count === 1 ? 'event' : 'events'} in ${files} ${files === 1 ? 'file' : 'files'} to ${target} (${batch.ms} ms)`);
  }

  async #tierIceberg(settings: EffectiveSettings): Promise<SweepOutcome> {
    const { connections } = this.#options;
    const table = resolveIcebergTable(settings.tierIcebergTable, this.#options.catalogs);
    const objects = connections.bucket(table.connectionId, table.s3.bucket);
    const term = this.#options.term();
    const tiered: TieredLocation = { mode: 'iceberg', path: table.identifier, location: table.location, connectionId: table.connectionId };
    // Before anything is written there (the probe's object, the namespace, a table): the table's rows must be this log's history.
    const ahead = await this.#checkLocationHistory(term, tiered, 'audit.tier.iceberg.table', async () => {
      const loaded = await loadIcebergTable(objects, table);
      return loaded === undefined ? undefined : newestIcebergRow(objects, table, loaded.metadata);
    });
    await this.#probeOnce(objects, table.connectionId, table.s3.prefix, term);
    const target = `${term}|${table.identifier}|${table.location}`;
    // The sweep creates what is missing: the namespace (once per term) and the table.
    const namespaceKey = `${table.identifier}|${table.location}`;
    if (!this.#namespaces.has(term, namespaceKey)) {
      await ensureNamespace(connections, table);
      this.#namespaces.add(term, namespaceKey);
    }
    const context = this.#tableContext(objects, table, settings, term);
    const current = await this.#currentTable(target, objects, table);
    // A hint behind the table (a commit whose hint write failed, a deposed leader's late one):
    // moved up, or readers that trust it (icebird, DuckDB) read an older version for as long as
    // nothing is committed (review). Not for a failure of its own: the next sweep tries again.
    if (current.hintVersion !== undefined && current.version > current.hintVersion && context.fence.mayCommit()) {
      await advanceVersionHint(objects, table, current.version).catch(() => undefined);
    }
    // The table's snapshot summary is the source of truth for where tiering stopped; when
    // another engine expired every snapshot that carried it, the live files' seq bounds are.
    const tableMark = tableWatermark(current) ?? (await watermarkFromLiveFiles(objects, table, current.metadata));
    const stored = await this.watermark();
    const watermark = laterWatermark(stored, tableMark ?? ZERO_WATERMARK);
    // Before any erasure pass: one run on a log that lacks the table's entries would find none
    // of their erasure records and still move the table's erasure cursor past them.
    await this.#checkWatermarkInLog(watermark, tiered, () => new IcebergTierSource(connections, table), ahead);
    if (this.#steppedDownByAdoption()) return 'not-leader';
    const holds: HoldingLocation | undefined =
      tableMark !== undefined && tableMark.seq > 0 ? { location: tiered, seqsAfter: (afterSeq, throughSeq, seqsMax) => icebergSeqsAfter(objects, table, current.metadata, afterSeq, throughSeq, seqsMax) } : undefined;
    // A table ahead of the stored watermark is recorded now, whatever the term: a commit of this
    // very term whose answer or bookkeeping was lost is one too, and its seqs need their tier
    // segment before the next commit continues from it (review: left out, verify excused them).
    if (watermark.seq > stored.seq) await this.#options.store.putMeta(await this.#vouchedAt(watermark, holds));
    else await this.#vouchInTerm(watermark, holds);
    // Erasures the table holds but has not applied yet (a pass stopped by a crash, or records an adoption just brought) go first.
    const loaded = await this.#applyErasures(context, current);
    const prefetched = this.#takePrefetch(target, watermark.seq);
    const next = prefetched ? await prefetched.next : await this.#nextBatch(watermark);
    const { batch } = next;
    if (batch.length === 0) {
      await this.#options.store.putMeta(await this.#vouchedAt(watermark, holds));
      this.#currentErasuresApplied = erasuresAppliedThrough(loaded.metadata);
      return 'nothing-to-tier';
    }
    const started = this.#now();
    const encoder = this.#options.encoder ?? INLINE_TIER_FILE_ENCODER;
    const encoded = prefetched ? prefetched.encoded : encodeIcebergBatch(loaded, batch, encoder);
    // A backlog: the next batch is read and queued for encoding now, behind this one, so the
    // encoder works on it while this batch's files, manifests and metadata are written.
    if (next.settledLeft) this.#startPrefetch(target, batch, loaded, encoder, prefetched);
    const result = await commitIcebergBatch(objects, table, loaded, batch, {
      term,
      nowMs: this.#now(),
      writerId: `auditlake:${table.identifier}`,
      afterSeq: watermark.seq,
      mayCommit: this.#fence(term).mayCommit,
      metadataLogEntriesMax: settings.maintenanceMetadataPreviousVersionsMax,
      erasureFree: !batch.some(isErasureRecord),
      encoded: encoded.then((files) => files ?? encodeIcebergBatch(loaded, batch, encoder)),
      ...(this.#options.beforeCommit ? { beforeCommit: this.#options.beforeCommit } : {}),
      encoder,
    });
    this.#succeeded();
    await this.#remember(term, tiered, result.watermark, { afterSeq: watermark.seq, seqs: batch.map((event) => event.seq) });
    await this.#writeProof(objects, table.s3.prefix, batch, table.identifier);
    this.#status.lastBatch = { count: batch.length, bytes: result.bytes, ms: this.#now() - started };
    this.#logTiered(result.files, table.identifier);
    this.#options.onTiered?.(batch, result.bytes);
    // The batch's erasure records are in the table now: apply them to its rows.
    const erased = await this.#applyErasures(context, result.loaded);
    this.#currentErasuresApplied = erasuresAppliedThrough(erased.metadata);
    const bounded = settings.maintenanceEnabled ? await this.#boundBetweenRuns(objects, table, { loaded: erased, manifests: result.manifests }, settings, term) : erased;
    // Kept only for the commit that follows at once (a backlog), and only when known: where a
    // failed step between runs left the table is not, and the next sweep then loads it.
    this.#lastTable = bounded === undefined || !next.settledLeft ? undefined : { target, turn: this.#lock.turns, loaded: bounded };
    return this.#tieredOutcome(next);
  }

  /**
   * True when this sweep's adoption cut the log and so stepped this node down (ClusterNode):
   * nothing more is committed in this term. The log now ends with the adoption's record, which
   * the next leader's sweep tiers; going on here would only fail at the commit. Erasures the
   * adopted rows bring are found again by the next term's first sweep.
   */
  #steppedDownByAdoption(): boolean {
    return this.#adopted !== undefined && !this.#options.isLeader();
  }

  /**
   * A location must hold this log's history before this log tiers into it: operators change the
   * tier target at runtime, and one pointed by mistake at another cluster's path or table (or at
   * one a log this one diverged from tiered to) would otherwise have this log's next entries
   * committed after the other log's rows — its searches show them, its sweep stops (tiered past
   * its log's end), its verification reports gaps, and this log's own history is split. The
   * markers or snapshot summary a sweep reads for its watermark show only rows past this log's
   * watermark (#checkWatermarkInLog), so rows ending at or below it were never compared with the log.
   *
   * So before the first sweep of this process writes anything there, the location's newest
   * tiered row (`newest`: the last commit's row, one data file read) must be a row of this log:
   * the same seq with the same chain hash in the local log (or record hash; or eventId, term
   * and ingest time for records without the chain). Where retention deleted that entry, the
   * chain hash kept at the end of a deleted range, else the entry's term (log matching: a term
   * orders each seq once), still tells a row of another log; when neither can, the location is
   * taken only if this log's own history names it (`tieredLocations`: this log tiered there and
   * its retention has since deleted those entries, the case of a target changed away and back) —
   * else it cannot be shown to be this log's, and it is refused too. Refused means
   * AUDIT_TIER_TARGET_UNUSABLE with nothing written there and neither the watermark nor
   * `tieredLocations` changed. Rows past this log's watermark are left to #checkWatermarkInLog,
   * whose refusal names the admin's adoption (a successor whose log lacks what its leader
   * tiered); an empty location has nothing to compare. A location found to be this log's, or
   * committed to by this sweeper, is not checked again while this node leads in that term.
   * Answers the newest row when it lies past this log's watermark, for #checkWatermarkInLog to
   * compare.
   */
  async #checkLocationHistory(term: number, location: TieredLocation, settingKey: string, newest: () => Promise<NewestTieredRow | undefined>): Promise<NewestTieredRow | undefined> {
    const id = tieredLocationKey(location);
    if (this.#historyChecked.has(term, id)) return undefined;
    const found = await newest();
    if (found === undefined) return undefined;
    const seq = found.row?.seq ?? found.watermark.seq;
    if (seq > (await this.watermark()).seq) return found;
    const verdict = await this.#rowOfThisLog(seq, found);
    if (verdict === true) {
      this.#historyChecked.add(term, id);
      return undefined;
    }
    const target = location.path;
    const remedy = `nothing was written to it, and tiering stops until ${settingKey} names a location of this cluster's own (a new one, or one this log tiered to before)`;
    if (verdict !== undefined) {
      throw new AuditError(
        AuditErrorCode.TIER_TARGET_UNUSABLE,
        `${target} holds another log's history, not this node's: its newest tiered row, seq ${seq}, ${verdict} (another cluster's tier, or one a log this node's diverged from tiered to). Tiering there would add this log's entries after that log's rows — its searches would show them and its own tiering and verification would fail — so ${remedy}`,
      );
    }
    // By place, not spelling: a target set back to a place this log tiered to, written another way.
    if (includesPlace(await readTieredLocations(this.#options.store), location, this.#options.connections)) {
      this.#historyChecked.add(term, id);
      return undefined;
    }
    throw new AuditError(
      AuditErrorCode.TIER_TARGET_UNUSABLE,
      `${target} holds tiered rows through seq ${seq}, whose entry this node's retention has deleted, and this log never tiered there: its rows cannot be shown to be this log's history (another cluster's tier?), so ${remedy}`,
    );
  }

  /**
   * Whether the location's newest row (at `seq`) is this log's: true; a string saying how it
   * differs from this log's entry there; undefined when that cannot be told (retention deleted
   * the entry and kept nothing that tells).
   */
  async #rowOfThisLog(seq: number, found: NewestTieredRow): Promise<true | string | undefined> {
    const { store } = this.#options;
    const row = found.row;
    const entry = seq > store.position.lastSeq ? undefined : await store.getBySeq(seq);
    if (entry !== undefined) {
      if (row === undefined) {
        // Rows from before the record chain: the commit's watermark is all there is to compare.
        return found.watermark.ingestTs === 0 || entry.ingestTs === found.watermark.ingestTs ? true : `was ingested at ${found.watermark.ingestTs}, this node's entry at that seq at ${entry.ingestTs}`;
      }
      if (entry.chainHash !== undefined && row.chainHash !== undefined) return entry.chainHash === row.chainHash || `has chain hash ${brief(row.chainHash)}, this node's entry at that seq ${brief(entry.chainHash)}`;
      if (entry.recordHash !== undefined && row.recordHash !== undefined) return entry.recordHash === row.recordHash || `has record hash ${brief(row.recordHash)}, this node's entry at that seq ${brief(entry.recordHash)}`;
      return (entry.eventId === row.eventId && entry.term === row.term && entry.ingestTs === row.ingestTs) || `is event ${row.eventId} of term ${String(row.term)} ingested at ${row.ingestTs}, this node's entry at that seq event ${entry.eventId} of term ${entry.term} ingested at ${entry.ingestTs}`;
    }
    if (row === undefined || seq > store.position.lastSeq) return undefined;
    // Deleted by retention: what the store kept of it.
    const kept = store.prunedRanges.find((range) => range.toSeq === seq)?.chainHash;
    if (kept !== undefined && row.chainHash !== undefined) return kept === row.chainHash || `has chain hash ${brief(row.chainHash)}, the one this node kept when its retention deleted that seq ${brief(kept)}`;
    const term = store.termAt(seq);
    if (row.term !== undefined && row.term !== term) return `has term ${row.term}, this node's entry at that seq (deleted by its retention) term ${term}`;
    return undefined;
  }

  /**
   * The watermark must name an entry of this node's log, the one that was tiered: seqs are the
   * tier's identity for events, so a sweep that went on from a watermark its log does not hold
   * would skip this log's own entries up to it (never tiered, then pruned) while the entries
   * tiered under those seqs came back under new ones (tiered twice). That happens when a leader
   * tiered entries no surviving node received before it died, and when a node whose log was
   * lost is pointed at a tier that goes on. Then (past the log's end, or where the entry at the
   * watermark's seq was ingested at another time than the one tiered; an entry since deleted by
   * retention cannot be compared) the sweep is refused, loudly (tierStatus.lastError), naming
   * the way out: an admin's `adoptTier(seq)` lets the next sweep have the log take the tier's
   * entries after the last seq where the two agree, its own from there ordered again after them
   * (`adoptTierSuffix`). Not done unasked: the rows come from the bucket, and whoever can write
   * the bucket could otherwise put events into the log that the next checkpoint would sign.
   *
   * The ingest time alone does not tell two logs apart: a successor whose clock lags its dead
   * leader's can order its own entries in the very millisecond the leader's batch was ingested
   * under the same seqs. So the location's newest row, when #checkLocationHistory found it past
   * this log's watermark (`ahead`), must also be this log's entry at its seq (chain hash, else
   * record hash, else eventId, term and ingest time).
   */
  async #checkWatermarkInLog(watermark: Watermark, tiered: TieredLocation, tier: () => TierSource & { close(): Promise<void> }, ahead?: NewestTieredRow): Promise<void> {
    const { store } = this.#options;
    const target = tiered.path;
    const end = store.position.lastSeq;
    let why: string | undefined;
    if (watermark.seq > end) why = `past the end of this node's log (seq ${end})`;
    else if (watermark.ingestTs) {
      const entry = await store.getBySeq(watermark.seq);
      if (entry !== undefined && entry.ingestTs !== watermark.ingestTs) why = `but this node's entry at that seq was ingested at ${entry.ingestTs}, not ${watermark.ingestTs}`;
    }
    if (why === undefined && ahead?.row?.seq !== undefined && ahead.row.seq <= end) {
      const verdict = await this.#rowOfThisLog(ahead.row.seq, ahead);
      if (typeof verdict === 'string') why = `but its row at seq ${ahead.row.seq} ${verdict}`;
      // Nothing tells: retention deleted this log's entry there though the watermark never
      // counted it tiered — it deleted untiered entries, so tiering was off then — and kept
      // nothing that differs. Taken, a location another cluster tiers to, set by mistake when
      // tiering was turned on, had this log's entries committed after that cluster's rows; so,
      // as for rows at or below the watermark, only a location this log tiered to is taken
      // unasked. The refusal is the adoption's: a successor whose dead leader tiered there first
      // and whose own retention had run further meets it too, and an admin who has checked the
      // tier lets the adoption take it (review: a bare refusal left that successor no way on).
      else if (verdict === undefined && !includesPlace(await readTieredLocations(store), tiered, this.#options.connections)) {
        why = `but its row at seq ${ahead.row.seq}, past this node's watermark (seq ${(await this.watermark()).seq}), is one whose entry this node's retention deleted while tiering was off, and this log never tiered there, so nothing shows it is this log's`;
      }
    }
    if (why === undefined) return;
    const unusable = (detail: string) =>
      new AuditError(
        AuditErrorCode.TIER_TARGET_UNUSABLE,
        `${target} is tiered through seq ${watermark.seq}, ${why}: those seqs were tiered from a log this node does not hold (a leader that died before any survivor received them, or a node whose data was lost — or another cluster tiers there, a target set by mistake: then point tiering at a location of this cluster's own, since an adoption would take that cluster's history into this log); going on would skip this log's own entries there and tier the others twice, so tiering stops here until the logs are reconciled: ${detail}`,
      );
    if (this.#adoptThrough !== watermark.seq) {
      throw unusable(
        `once the tier is checked to hold what that log tiered, POST /admin/audit/tier/adopt {"throughSeq": ${watermark.seq}} has this node's log take the tier's entries and order its own again after them`,
      );
    }
    if (!this.#options.isLeader()) throw unusable('this node no longer leads, so it does not take the tier\'s entries into its log');
    const source = tier();
    try {
      const term = this.#options.term();
      const recordEvent = this.#adoptRecord;
      // The record's term is taken while this node leads: its lease keeps anyone else from taking one meanwhile.
      const record =
        recordEvent === undefined
          ? undefined
          : { term: this.#options.reserveTerm ? await this.#options.reserveTerm() : term, event: (adoption: TierAdoption) => recordEvent({ ...adoption, target, throughSeq: watermark.seq }) };
      const adoption = await adoptTierSuffix(store, source, watermark, {
        entriesMax: this.#options.adoptEntriesMax ?? TIER_ADOPTION_ENTRIES_MAX,
        termNow: term,
        ...(this.#options.soleWriter === true ? { soleWriter: true } : {}),
        mayAdopt: () => this.#options.isLeader() && this.#options.term() === term,
        now: this.#now,
        ...(record === undefined ? {} : { record }),
      });
      this.#adopted = { ...adoption, target, throughSeq: watermark.seq };
      this.#dropPrefetch();
      // The log now holds the tier's entries, which retention may delete as soon as they count
      // as tiered: the merged reader must know the location by then. A node that never tiered
      // to it (its data was lost) learned it only at its next commit, and its search showed none
      // of the adopted events meanwhile.
      const recorded = await this.#locationsMeta(tiered);
      if (TIERED_LOCATIONS_META in recorded) await store.putMeta(recorded);
      this.#options.log.warn(
        { target, watermarkSeq: watermark.seq, ...adoption },
        `Audit tiering: ${target} is tiered through seq ${watermark.seq}, ${why}; as an admin asked, this node's log now holds the tier's ${adoption.adopted} entries after seq ${adoption.commonSeq}, and its own ${adoption.moved} from there are ordered again after them`,
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof TierTermNotBefore && err.term > TIER_TERM_LEARN_MAX) {
        throw unusable(`${message}: no cluster hands out terms past ${TIER_TERM_LEARN_MAX} (one a second for a century is 3.2e9), so the bucket holds rows no auditlake leader wrote; they are not adopted and their term is not taken in (a forged term taken in stopped the cluster keeping a leader)`);
      }
      if (err instanceof TierTermNotBefore && this.#options.learnTerm !== undefined) {
        try {
          await this.#options.learnTerm(err.term);
        } catch (learnErr) {
          // The cluster's own bound (a term far above every term it knows) refused it: said in
          // the adoption's words, so the admin learns what to make of the bucket, not only the term.
          const why = learnErr instanceof Error ? learnErr.message : String(learnErr);
          throw unusable(`${message}: this cluster does not take in term ${err.term} (${why}), so the bucket holds rows no leader of this cluster wrote; they are not adopted`);
        }
        throw unusable(`${message}: the cluster handed out those terms again (its coordinator lost its data), so this node took in term ${err.term} and stepped down; the next leader's term is above it — unless the tier is another cluster's, which an adoption would take into this log — POST /admin/audit/tier/adopt {"throughSeq": ${watermark.seq}} again once a leader is elected`);
      }
      throw unusable(`taking them into this log failed: ${message}`);
    } finally {
      await source.close();
    }
  }

  /**
   * The table's current version. During a catch-up (the last sweep committed a batch and left
   * more, so this one follows at once), when this sweep's turn of the commit lock directly
   * follows that sweep's at the same target in the same term, its table is still current as far
   * as this process knows (every commit of this process to a table takes the lock), and it is
   * used as it is: loading it again cost three requests per commit (hint, version probe,
   * metadata), most of a sweep's time during a catch-up. A commit by another process meanwhile
   * (a deposed leader's late write, an outside engine's) makes the commit's conditional create
   * lose, or, when that engine's cleanup deleted the version the commit creates, its fork check
   * (`commitMetadataVersion`); it then reloads and re-applies or fails as always. Only back to
   * back, which keeps that window short (the rest of the last sweep and this one's batch); after
   * an interval the table is loaded (and created if missing).
   */
  async #currentTable(target: string, objects: ObjectStore, table: IcebergTableRef): Promise<LoadedTable> {
    const last = this.#lastTable;
    this.#lastTable = undefined;
    if (last !== undefined && last.target === target && last.turn + 1 === this.#lock.turns) return last.loaded;
    return ensureIcebergTable(objects, table, this.#now());
  }

  /** The read-ahead batch when it continues from `afterSeq` at `target`; any other is dropped. */
  #takePrefetch(target: string, afterSeq: number): Prefetch | undefined {
    const prefetch = this.#prefetch;
    this.#prefetch = undefined;
    if (prefetch !== undefined && prefetch.target === target && prefetch.afterSeq === afterSeq) return prefetch;
    if (prefetch !== undefined) this.#prefetchEpoch++;
    return undefined;
  }

  #dropPrefetch(): void {
    this.#prefetch = undefined;
    this.#prefetchEpoch++;
  }

  /**
   * Has the READ_AHEAD_BATCHES batches after `batch` read and queued for encoding: the one
   * `taken` (the read-ahead this sweep committed) already read after it, when there is one,
   * else a new read. Nothing is written and nothing is committed here: the next sweep commits
   * the first (one commit at a time, under the lock, fenced as always) only if it continues
   * from where `batch` ends. A read or encoding that fails is not an error of this sweep: the
   * next sweep reads and encodes again.
   */
  #startPrefetch(target: string, batch: readonly StoredEvent[], loaded: LoadedTable, encoder: TierFileEncoder, taken: Prefetch | undefined): void {
    const last = batch[batch.length - 1] as StoredEvent;
    const following = taken?.following;
    const head = following !== undefined && following.target === target && following.afterSeq === last.seq ? following : this.#readAhead(target, { seq: last.seq, ingestTs: last.ingestTs }, loaded, encoder);
    this.#readAheadAfter(head, READ_AHEAD_BATCHES - 1, loaded, encoder);
    this.#prefetch = head;
  }

  /** Reads the batch after `after` and queues its encoding. */
  #readAhead(target: string, after: Watermark, loaded: LoadedTable, encoder: TierFileEncoder): Prefetch {
    const next = this.#nextBatch(after);
    const encoded = next.then((n) => (n.batch.length === 0 ? undefined : encodeIcebergBatch(loaded, n.batch, encoder))).catch(() => undefined);
    // Never left unhandled: a failed read is seen (and retried) by the sweep that awaits it.
    next.catch(() => undefined);
    return { target, afterSeq: after.seq, next, encoded };
  }

  /**
   * Once `prefetch` is read, and only if it was cut by the size limit (more is settled after
   * it), reads the `depth` batches after it as well, each when the one before it is read —
   * unless what was read ahead has been dropped meanwhile.
   */
  #readAheadAfter(prefetch: Prefetch, depth: number, loaded: LoadedTable, encoder: TierFileEncoder): void {
    if (depth < 1) return;
    if (prefetch.following !== undefined) {
      this.#readAheadAfter(prefetch.following, depth - 1, loaded, encoder);
      return;
    }
    const epoch = this.#prefetchEpoch;
    prefetch.next.then(
      (read) => {
        const last = read.batch.at(-1);
        if (last === undefined || !read.settledLeft || epoch !== this.#prefetchEpoch || prefetch.following !== undefined || this.#closed) return;
        prefetch.following = this.#readAhead(prefetch.target, { seq: last.seq, ingestTs: last.ingestTs }, loaded, encoder);
        this.#readAheadAfter(prefetch.following, depth - 1, loaded, encoder);
      },
      () => undefined,
    );
  }

  /** What a commit of this sweep to `table` works with (the fence: this term, while leading). */
  #tableContext(objects: ObjectStore, table: IcebergTableRef, settings: EffectiveSettings, term: number): MaintenanceContext {
    return {
      objects,
      table,
      fence: this.#fence(term),
      now: this.#now,
      metadataLogEntriesMax: settings.maintenanceMetadataPreviousVersionsMax,
      ...(this.#options.encoder ? { encoder: this.#options.encoder } : {}),
      ...(this.#options.onStep ? { onStep: this.#options.onStep } : {}),
    };
  }

  /**
   * Applies the erasure records the table holds but not yet its rows (none: nothing is read but
   * the table's properties). Under the commit lock, as the sweep runs; a failure fails the sweep,
   * which retries it (tiering goes on only once the erasure is applied).
   */
  async #applyErasures(context: MaintenanceContext, loaded: LoadedTable): Promise<LoadedTable> {
    const result = await applyIcebergErasures(context, loaded, this.#options.store);
    if (result.erasures > 0 || result.filesDeleted > 0) {
      this.#options.log.info(
        { erasures: result.erasures, filesRewritten: result.filesRewritten, rowsRewritten: result.rowsRewritten, snapshotsExpired: result.snapshotsExpired, filesDeleted: result.filesDeleted, table: context.table.identifier },
        `Audit tiering: ${result.erasures} erasure ${result.erasures === 1 ? 'record' : 'records'} applied to ${context.table.identifier} (${result.rowsRewritten} rows in ${result.filesRewritten} files rewritten; ${result.snapshotsExpired} snapshots expired, ${result.filesDeleted} files deleted)`,
      );
      this.#options.onErased?.(result);
    }
    return result.loaded;
  }

  /**
   * Keeps what every commit reads and rewrites bounded between maintenance runs: the manifests
   * of the current snapshot are merged once they reach MANIFESTS_BETWEEN_RUNS_MAX (each commit
   * copies the whole manifest list), and snapshots expire back to `snapshot.retain.last` once
   * twice as many gathered (each is about half a KiB of every metadata file). Both are the
   * maintenance steps themselves. The batch is committed already: a failure here is a warning,
   * not a failed sweep, and the next sweep or run does it.
   */
  async #boundBetweenRuns(objects: ObjectStore, table: IcebergTableRef, committed: { loaded: LoadedTable; manifests: number }, settings: EffectiveSettings, term: number): Promise<LoadedTable | undefined> {
    const context = {
      objects,
      table,
      fence: this.#fence(term),
      now: this.#now,
      metadataLogEntriesMax: settings.maintenanceMetadataPreviousVersionsMax,
      // When this process first saw each snapshot: without it, a clock step forward (or a
      // failover to a node ahead) made a compaction of seconds ago look past its grace, and this
      // expiry took its parent and the replaced files under searches that had listed them.
      snapshotsSeen: seenAt(this.#snapshotsSeen, table.location),
      ...(this.#options.monotonicMs === undefined ? {} : { monotonicMs: this.#options.monotonicMs }),
    };
    try {
      const merged = await rewriteManifestsIfMany(context, committed.loaded, committed.manifests, this.#options.manifestsBetweenRunsMax);
      const expired = await expireOverdueSnapshots(context, merged?.loaded ?? committed.loaded, settings.maintenanceSnapshotRetainLast);
      if (merged || expired) {
        this.#options.log.info(
          { manifestsReplaced: merged?.manifestsReplaced ?? 0, snapshotsExpired: expired?.snapshotsExpired ?? 0, filesDeleted: expired?.filesDeleted ?? 0, table: table.identifier },
          `Audit tiering: between maintenance runs ${merged ? `${merged.manifestsReplaced} manifests of ${table.identifier} merged` : ''}${merged && expired ? ', ' : ''}${expired ? `${expired.snapshotsExpired} snapshots expired (${expired.filesDeleted} files deleted)` : ''}`,
        );
      }
      return expired?.loaded ?? merged?.loaded ?? committed.loaded;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.#options.log.warn({ err: message, table: table.identifier }, `Audit tiering: keeping ${table.identifier} small between maintenance runs failed: ${message}`);
      return undefined;
    }
  }

  /**
   * Every commit relies on the store refusing a second create of its commit object (the first
   * wins; a deposed leader's late one is refused). Checked once per term and target before the
   * first commit: a store that ignores `If-None-Match` fails the sweep with a `lastError` that
   * says so, and nothing is tiered there until it is fixed (each retry probes again).
   */
  async #probeOnce(objects: ObjectStore, connectionId: string, prefix: string, term: number): Promise<void> {
    const key = `${connectionId}|${objects.bucket}|${prefix}`;
    if (this.#probed.has(term, key)) return;
    await probeConditionalCreate(objects, prefix);
    this.#probed.add(term, key);
  }

  /**
   * The `_integrity/` digest objects of the checkpoints and keys this committed batch holds
   * (docs/integrity.md). The commit stands either way: a failure here is logged, and the
   * records themselves (tiered with the batch) still carry every checkpoint.
   */
  async #writeProof(objects: ObjectStore, prefix: string, batch: readonly StoredEvent[], target: string): Promise<void> {
    try {
      await writeIntegrityObjects(objects, prefix, batch);
    } catch (err) {
      this.#options.log.warn({ err, target }, `Audit tiering: could not write the _integrity objects of the batch ending at seq ${batch.at(-1)?.seq ?? 0} to ${target}`);
    }
  }

  /** Events after the watermark, settled, at most a batch, whole ingest-millisecond groups. */
  async #nextBatch(watermark: Watermark): Promise<NextBatch> {
    const heldThrough = this.#options.heldThrough?.();
    // Measured against the ingest time the log would stamp now, not only the wall clock: a
    // leader whose clock stepped back stamps ahead of it (IngestClock), and would otherwise
    // settle nothing until the wall clock caught up.
    const now = Math.max(this.#now(), this.#options.store.ingestNow());
    const rules = { batchSizeMax: this.#options.batchSizeMax, ingestTsMax: now - this.#options.settleMs, ...(heldThrough === undefined ? {} : { seqMax: heldThrough }) };
    let limit = rules.batchSizeMax + 1;
    for (;;) {
      const events = await this.#options.store.readBySeq(watermark.seq, limit);
      const batch = pickBatch(events, rules);
      // A first group larger than what was read may continue past it: read further.
      if (events.length === limit && batch.length === events.length) {
        limit *= 2;
        continue;
      }
      // Cut by the size limit: events the next batch may take are left.
      return { batch, settledLeft: batch.length < eligibleCount(events, rules) };
    }
  }

  /** Applies erasures to the locations tiered to before the current target (earlier-target-erasure.ts), under this sweep's fence. */
  async #eraseInEarlierTargets(settings: EffectiveSettings): Promise<void> {
    await this.#earlierTargets.apply(this.#currentLocation(settings), this.#fence(this.#options.term()), settings.maintenanceMetadataPreviousVersionsMax);
  }

  /** What every commit of a sweep in `term` is fenced by: this node still leads, in that term. */
  #fence(term: number): { term: number; mayCommit: () => boolean } {
    return { term, mayCommit: () => this.#options.isLeader() && this.#options.term() === term };
  }

  /** The location the settings tier to, as #remember records it; undefined with tiering off. */
  #currentLocation(settings: EffectiveSettings): TieredLocation | undefined {
    if (settings.tierMode === 'parquet') return { mode: 'parquet', path: settings.tierParquetPath, connectionId: settings.tierConnectionId };
    if (settings.tierMode !== 'iceberg') return undefined;
    const table = resolveIcebergTable(settings.tierIcebergTable, this.#options.catalogs);
    return { mode: 'iceberg', path: table.identifier, location: table.location, connectionId: table.connectionId };
  }

  /**
   * Moves ERASURES_APPLIED_META (never back) to the lowest of what the current target
   * (`currentThrough`) and every earlier target have applied, bounded by the log's last seq.
   * Retention keeps every erasure record above it (localCleanupPolicy).
   */
  async #recordErasuresApplied(currentThrough: number): Promise<void> {
    const { store } = this.#options;
    const through = Math.min(currentThrough, this.#earlierTargets.appliedThrough, store.position.lastSeq);
    if (through > (await tierErasuresAppliedThrough(store))) await store.putMeta({ [ERASURES_APPLIED_META]: through });
  }

  /**
   * The replicated metadata that says this leader's log holds the tier through `watermark`
   * (it tiered it, or found it in its log): the watermark, with the term this node leads in
   * (WATERMARK_TERM_META). Retention on every node counts entries of a later term as not
   * tiered, whatever the watermark's seq (tieredThroughHere): a watermark that came from
   * another log — a leader that tiered alone and died — must not cover this leader's own.
   */
  #vouched(watermark: Watermark): Record<string, unknown> {
    const term = this.#options.term();
    this.#vouchedTerm = term;
    return { [WATERMARK_META]: watermark, [WATERMARK_TERM_META]: term };
  }

  /**
   * #vouched, with `location` added to the tiered locations when it is not listed yet: given when
   * the watermark was read from that location, which holds rows. Its commits may be past what
   * this log recorded (a leader that died before recording its first commit there, a commit
   * whose read-back failed and whose retry found it made); retention deletes what the watermark
   * counts as tiered, and the merged reader reads only the listed locations. Stored with the
   * watermark alone, a successor's log had every node delete the events of such a first commit
   * while no search read the location holding them (review).
   *
   * The seqs the location holds between the stored watermark and `watermark` go into the tier
   * segments as a commit's do: once retention deletes them here, a verifier reading the node
   * with the tier must find them there (without a segment it excused their absence). Past
   * RECOVERED_SEGMENT_SEQS_MAX seqs held (a log whose bookkeeping is far behind its tier) the
   * reading stops, and verify excuses that range as before. The bound counts the seqs the files
   * hold, not the range's span: a first commit after a long stretch of retention with tiering
   * off spans far more seqs than it holds, and was excused.
   */
  async #vouchedAt(watermark: Watermark, holding: HoldingLocation | undefined): Promise<Record<string, unknown>> {
    if (holding === undefined) return this.#vouched(watermark);
    const stored = await this.watermark();
    const max = this.#options.recoveredSegmentSeqsMax ?? RECOVERED_SEGMENT_SEQS_MAX;
    let segments = {};
    if (watermark.seq > stored.seq) {
      const held = await holding.seqsAfter(stored.seq, watermark.seq, max);
      if (held !== undefined) segments = await this.#segmentsMeta(holding.location, stored.seq, held);
      else this.#options.log.warn({ fromSeq: stored.seq + 1, toSeq: watermark.seq }, `Audit tiering: seqs ${stored.seq + 1}..${watermark.seq} were tiered by commits this log did not record; the location holds more than ${max} of them (or more than ${SEQS_AFTER_FOOTERS_MAX} files would be read to find them), so they are not recorded as tier segments (verify excuses their absence once deleted here)`);
    }
    return { ...this.#vouched(watermark), ...segments, ...(await this.#locationsMeta(holding.location)) };
  }

  /** Stores that the watermark holds for this log in this term, when not stored yet (once a term); `holding` as for #vouchedAt. */
  async #vouchInTerm(watermark: Watermark, holding?: HoldingLocation): Promise<void> {
    if (this.#vouchedTerm === this.#options.term()) return;
    await this.#options.store.putMeta(await this.#vouchedAt(watermark, holding));
  }

  /**
   * The replicated metadata that records `location` as one this log tiered to (recordTieredLocation:
   * added, recorded endpoints brought up to date), or nothing when that changes nothing.
   */
  async #locationsMeta(location: TieredLocation): Promise<Record<string, unknown>> {
    const recorded = recordTieredLocation(await readTieredLocations(this.#options.store), location, this.#options.connections);
    return recorded === undefined ? {} : { [TIERED_LOCATIONS_META]: recorded };
  }

  /** The tier segments (and how far dropped ones reached) once `seqs`, continuing from `afterSeq`, are recorded as held by `location`. */
  async #segmentsMeta(location: TieredLocation, afterSeq: number, seqs: readonly number[]): Promise<Record<string, unknown>> {
    const { store } = this.#options;
    const url = location.mode === 'parquet' ? location.path : location.location;
    const { segments, cutThrough } = segmentsAfterCommit(await readTierSegments(store), url, afterSeq, seqs);
    const cut = cutThrough === undefined ? {} : { [TIER_SEGMENTS_CUT_META]: Math.max(cutThrough, (await readTierSegmentsCut(store)) ?? 0) };
    return { [TIER_SEGMENTS_META]: segments, ...cut };
  }

  /**
   * Stores, with the new watermark, that the location received tiered events and which seqs this
   * commit gave it (`committed`: the watermark it continued from and the batch's seqs), so a
   * verifier reading the node with the tier knows what the tier must hold (tier-segments.ts).
   */
  async #remember(term: number, location: TieredLocation, watermark: Watermark, committed: { afterSeq: number; seqs: readonly number[] }): Promise<void> {
    // Its newest row is this log's now: later sweeps of the term need not look again (#checkLocationHistory).
    this.#historyChecked.add(term, tieredLocationKey(location));
    const { store } = this.#options;
    const locations = await this.#locationsMeta(location);
    const segments = await this.#segmentsMeta(location, committed.afterSeq, committed.seqs);
    await store.putMeta({ ...this.#vouched(watermark), ...segments, ...locations });
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running?.catch(() => undefined);
    await this.#checkpointing;
  }
}

/** The start of a hash, enough to tell two apart in a message. */
function brief(hash: string): string {
  return `${hash.slice(0, 12)}…`;
}
