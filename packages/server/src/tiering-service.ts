import {
  findTieredRecords,
  IcebergTierSource,
  ParquetTierSource,
  S3Connections,
  TierEncodePool,
  WATERMARK_META,
  WATERMARK_TERM_META,
  readTieredLocations,
  tieredLocationKey,
  ZERO_WATERMARK,
  type TierSource,
  type TieredRecordRef,
  type TieredLocation,
  type Watermark,
} from '@auditlake/lake';
import { AuditError, AuditErrorCode, SELF_SOURCE, encodeEvent, newEventId, type AuditEvent, type EncodedEvent, type NodeConfig } from '@auditlake/model';
import { DAY_MS, type AuditStore, type PrunePolicy } from '@auditlake/store';
import { CommitLock, MaintenanceScheduler, TierSweeper, firstUnappliedErasureSeq, localCleanupPolicy, tieredThroughHere, validateTierTarget, type AdoptedTier, type MaintenanceRun, type TierStatus } from '@auditlake/tiering';
import { DeferredCount } from './deferred-count.js';
import { ResendLookupGate, ResendLookupsBusy } from './resend-lookup-gate.js';
import type { Membership } from './membership.js';
import type { NodeMetrics } from './metrics.js';
import type { SettingsService, SettingsValidator } from './settings-service.js';

/** Least time between two warnings that the tier could not be read for such a lookup (each is counted). */
const RESEND_WARNING_INTERVAL_MS = 10_000;

/** Lookups that may wait for a turn, per lookup that may run (ResendLookupGate). */
const RESEND_LOOKUPS_WAITING_PER_RUNNING = 16;

export interface TierStatusView extends TierStatus {
  /** Events not yet tiered: exact, never capped (the store counts it without a scan). */
  backlog: number;
  /**
   * Untiered events older than audit.retention.days, kept because tiering is on (capped at
   * DEFERRED_COUNT_MAX; counted in the background, up to DEFERRED_RECOUNT_MS old).
   */
  deferred: number;
  /**
   * The completeness ledger in one line (GET /admin/audit/ledger has it per source): sources
   * that send sourceSeq, how many of them have holes, and how many sourceSeqs the holes hold;
   * the idle sources retired from it and the sourceSeqs they missed then.
   */
  ledger: { sources: number; sourcesWithGaps: number; missing: number; sourcesRetired: number; retiredMissing: number };
  /**
   * On a cluster leader whose standbys do not hold its whole log: the seq they all hold through
   * and the standbys that hold no more (the sweep tiers no further; one that stays reachable but
   * does not catch up holds tiering back until it does), and those of them that keep asking
   * for entries they were sent without applying them (`notApplying`, absent when none). Null
   * when nothing is held back.
   */
  heldByStandbys: { throughSeq: number; nodes: string[]; notApplying?: string[] } | null;
  /**
   * The seq of the oldest erasure record some tier location has not applied yet: local retention
   * keeps it and everything after it until then (null: nothing held). As of the last retention
   * run (every auditlake.audit.retention.interval.ms).
   */
  erasureHoldSeq: number | null;
  /**
   * When retention counts this log as tiered only through `throughSeq`, below the watermark's
   * `watermarkSeq`: the entries after it were ordered in a later term than the one the
   * watermark was tiered or vouched for in (a leader that tiered alone died, and this log holds
   * its successor's own entries under those seqs). Retention keeps them until the leader's sweep
   * finds the watermark in its log, or an admin adopts the tier. As of the last retention run;
   * null when nothing is held so.
   */
  retentionHeldByTerm: { throughSeq: number; watermarkSeq: number } | null;
}

/**
 * Validates a tier target when settings are saved (wired into SettingsService), against the
 * locations that received tiered events as replicated metadata lists them.
 */
export function tierTargetValidator(connections: S3Connections, config: NodeConfig, store: AuditStore): SettingsValidator {
  return async (effective, changed) => validateTierTarget(effective, connections, config.icebergCatalogs, await readTieredLocations(store), changed);
}

/** How much nicer than the node table maintenance's encoder thread runs (see TierEncodePoolOptions.niceness). */
export const MAINTENANCE_ENCODER_NICENESS = 10;

/** Batches of backlog past which scheduled maintenance defers compaction (see #compactionDeferral). */
export const COMPACTION_DEFERRAL_BATCHES = 2;

/**
 * Everything tiering needs on a node, wired once: S3 connections, the leader-only sweep, the
 * local cleanup policy, the tier sources the reader merges, and tierStatus.
 */
export class TieringService {
  readonly connections: S3Connections;
  readonly sweeper: TierSweeper;
  readonly maintenance: MaintenanceScheduler;
  readonly #store: AuditStore;
  readonly #settings: SettingsService;
  readonly #membership: Membership;
  readonly #sources = new Map<string, IcebergTierSource | ParquetTierSource>();
  /** The tiered locations as last read, with the store's metadata version they were read at. */
  #locations: { metaVersion: number; locations: TieredLocation[] } | undefined;
  /** The sweep's tier file encoder threads (`auditlake.audit.tier.encode.threads`); undefined: inline. */
  readonly #encoder: TierEncodePool | undefined;
  /** Table maintenance's own encoder thread (one; none when encoding is inline). */
  readonly #maintenanceEncoder: TierEncodePool | undefined;
  readonly #deferred: DeferredCount;
  readonly #metrics: NodeMetrics;
  readonly #resendLookupTimeoutMs: number;
  readonly #resendLookups: ResendLookupGate;
  /** When tieredCopies last warned that the tier could not be read. */
  #resendWarnedMs = Number.NEGATIVE_INFINITY;
  readonly #log: { info(o: object, m: string): void; warn(o: object, m: string): void };
  /** What the last retention policy kept back for erasure (tierStatus.erasureHoldSeq). */
  #erasureHoldSeq: number | null = null;
  /** What the last count of tiered entries held back by term (tierStatus.retentionHeldByTerm). */
  #retentionHeldByTerm: TierStatusView['retentionHeldByTerm'] = null;

  /** `connections` become this service's: close() closes them. */
  constructor(options: {
    store: AuditStore;
    config: NodeConfig;
    connections: S3Connections;
    settings: SettingsService;
    membership: Membership;
    metrics: NodeMetrics;
    log: { info(o: object, m: string): void; warn(o: object, m: string): void };
  }) {
    const { store, config, membership, settings } = options;
    this.#store = store;
    this.#settings = settings;
    this.#membership = membership;
    this.#metrics = options.metrics;
    this.#resendLookupTimeoutMs = config.resendLookupTimeoutMs;
    this.#resendLookups = new ResendLookupGate({ running: config.resendLookupConcurrency, waiting: config.resendLookupConcurrency * RESEND_LOOKUPS_WAITING_PER_RUNNING });
    this.#log = options.log;
    this.connections = options.connections;
    this.#deferred = new DeferredCount((cutoffMs, afterSeq, max) => store.countHeldBack(cutoffMs, afterSeq, max));
    // The sweep and table maintenance both commit to the same tables: their commits take turns.
    const commitLock = new CommitLock();
    // Both encode in worker threads, off the event loop that ingests, each in threads of its
    // own: a compaction rewrites up to 256 MiB in one job (tens of seconds), and a sweep whose
    // batch waited behind it stalled tiering for as long (measured in the soak: 20-37 s per run).
    this.#encoder = config.tierEncodeThreads > 0 ? new TierEncodePool({ threadsMax: config.tierEncodeThreads }) : undefined;
    // Maintenance's thread runs nicer: a compaction is never urgent, and on a node with few
    // cores its re-encoding took a core from the event loop and the sweep for most of each run.
    this.#maintenanceEncoder = config.tierEncodeThreads > 0 ? new TierEncodePool({ threadsMax: 1, niceness: MAINTENANCE_ENCODER_NICENESS }) : undefined;
    const encoder = this.#encoder ? { encoder: this.#encoder } : {};
    this.sweeper = new TierSweeper({
      commitLock,
      ...encoder,
      store,
      connections: this.connections,
      catalogs: config.icebergCatalogs,
      settings: () => settings.effective,
      isLeader: () => membership.isLeader(),
      term: () => membership.term(),
      intervalMs: config.tierIntervalMs,
      batchSizeMax: config.tierBatchSize,
      settleMs: config.tierSettleMs,
      heldThrough: () => membership.heldByStandbys()?.throughSeq,
      ...(membership.reserveTerm ? { reserveTerm: membership.reserveTerm } : { soleWriter: true }),
      ...(membership.learnTerm ? { learnTerm: membership.learnTerm } : {}),
      backoffInitialMs: config.tierBackoffInitialMs,
      backoffMaxMs: config.tierBackoffMaxMs,
      // With maintenance off the sweep deletes superseded Parquet log checkpoints, aged by the store's clock too.
      storeClock: { offsetMs: 0 },
      log: options.log,
      ...(config.debugTierCrashBeforeCommit ? { beforeCommit: () => process.kill(process.pid, 'SIGKILL') } : {}),
      // An erasure's row rewrite runs in the sweep: the same crash points name its steps.
      ...(config.debugMaintenanceCrashAt
        ? {
            onStep: (step) => {
              if (step === config.debugMaintenanceCrashAt) process.kill(process.pid, 'SIGKILL');
            },
          }
        : {}),
      onFailed: () => options.metrics.tierSweepFailures.inc(),
      onTiered: (batch, bytes) => {
        options.metrics.eventsTiered.inc(batch.length);
        options.metrics.bytesTiered.inc(bytes);
        // The ledger's tiered counts, from the events the sweep holds (not awaited: it waits its
        // turn behind the store's writes, which the sweep need not). One not counted here is
        // read back by countTieredThrough before any prune.
        store.countTieredBatch(batch).catch((err: unknown) => {
          if (store.status === 'open') options.log.warn({ err }, 'Audit tiering: counting a tiered batch in the day ledger failed; it is counted from the log before the next prune');
        });
      },
    });
    this.maintenance = new MaintenanceScheduler({
      store,
      connections: this.connections,
      catalogs: config.icebergCatalogs,
      settings: () => settings.effective,
      isLeader: () => membership.isLeader(),
      term: () => membership.term(),
      log: options.log,
      // The node's clock (as the store's; a test may move maintenance's further on): orphan
      // cleanup ages files against it.
      now: () => Date.now() + config.debugClockOffsetMs + config.debugMaintenanceClockOffsetMs,
      // ...and by the store's clock, which stamped the files: a node clock ahead by the minimum
      // age (debugClockOffsetMs, or a real one) must not make a file being committed look old.
      storeClock: { offsetMs: config.debugMaintenanceClockOffsetMs },
      onRun: (run) => this.#recordRun(run),
      compactionDeferral: () => this.#compactionDeferral(config.tierBatchSize),
      compactionTimeBudgetMs: config.maintenanceCompactionTimeBudgetMs,
      commitLock,
      ...(this.#maintenanceEncoder ? { encoder: this.#maintenanceEncoder } : {}),
      ...(config.debugMaintenanceCrashAt
        ? {
            onStep: (step) => {
              if (step === config.debugMaintenanceCrashAt) process.kill(process.pid, 'SIGKILL');
            },
          }
        : {}),
    });
  }

  /**
   * While the sweep has more than COMPACTION_DEFERRAL_BATCHES batches to catch up on, scheduled
   * maintenance leaves compaction for later: measured on a 1,000,000-event backlog, a compaction
   * every minute made the catch-up take 76 s instead of 58 s, and it merges files the catch-up
   * is still adding to the same days.
   */
  async #compactionDeferral(batchSize: number): Promise<string | undefined> {
    if (this.#settings.effective.tierMode === 'none') return undefined;
    const backlog = await this.#store.countAfter((await this.sweeper.watermark()).seq);
    return backlog > COMPACTION_DEFERRAL_BATCHES * batchSize ? `the tier is ${backlog} events behind (more than ${COMPACTION_DEFERRAL_BATCHES} batches)` : undefined;
  }

  /**
   * Each maintenance run is itself an audit event (source auditlake), with its figures. It is
   * received like any event: ordered here while this node leads, else kept in the outbox and
   * forwarded to the leader (a run can end just after leadership moved).
   */
  async #recordRun(run: MaintenanceRun): Promise<void> {
    const nowMs = Date.now();
    const eventId = newEventId(nowMs);
    const { table, trigger, ok, error, ...figures } = run;
    const event: AuditEvent = {
      eventId,
      userId: trigger,
      source: SELF_SOURCE,
      action: 'audit:TableMaintenance',
      resource: table,
      decision: '',
      tables: [table],
      query: '',
      details: `${ok ? 'ok' : `failed: ${error ?? ''}`}; ${Object.entries(figures).map(([k, v]) => `${k}=${v}`).join(', ')}`,
      timestamp: nowMs,
    };
    await this.#membership.receive([encodeEvent(event)], new Set([eventId]));
  }

  /**
   * An admin's leave to have this (leading) node's log take the tier's entries through
   * watermark seq `throughSeq` (see TierSweeper.adoptTier): runs that sweep and answers what it
   * adopted. The adoption's record (`audit:AdoptTier`, by `by`) is ordered in the same write as
   * the adopted entries, so no crash leaves an adoption unrecorded, and in a term reserved
   * above every other so the next election keeps it (AuditStore.adoptSuffix). Refused (nothing
   * changed) when the sweep adopted nothing: the log already holds the tier, the tier's
   * watermark is not `throughSeq`, or taking its entries failed — the message says which.
   */
  async adoptTier(throughSeq: number, by: string): Promise<{ target: string; throughSeq: number; commonSeq: number; adopted: number; moved: number; outcome: string }> {
    const result = await this.sweeper.adoptTier(throughSeq, (adoption) => adoptionRecord(adoption, by, Date.now()));
    if (result.adopted === undefined) {
      throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, result.error ?? `nothing to adopt: this node's log holds the tier through its watermark (the sweep ended ${result.outcome})`);
    }
    const { target, commonSeq, adopted, moved } = result.adopted;
    return { target, throughSeq, commonSeq, adopted, moved, outcome: result.outcome };
  }

  async watermark(): Promise<Watermark> {
    return (await this.#store.getMeta<Watermark>(WATERMARK_META)) ?? ZERO_WATERMARK;
  }

  /** The local cleanup policy in force now (every node applies it to its own store). */
  async prunePolicy(nowMs: number): Promise<PrunePolicy> {
    const tieredThrough = await this.countTiered();
    const unapplied = await firstUnappliedErasureSeq(this.#store);
    this.#erasureHoldSeq = unapplied ?? null;
    return localCleanupPolicy(this.#settings.effective, tieredThrough, nowMs, unapplied);
  }

  /**
   * Counts as tiered in the ledger what this node's log holds of the tier (tieredThroughHere),
   * before retention may delete it (day-ledger.ts) and before the ledger answers; returns
   * through which seq. The raw watermark would count a successor's own, never-tiered entries
   * under a watermark another log tiered (review).
   */
  async countTiered(): Promise<number> {
    const watermarkSeq = (await this.watermark()).seq;
    const tieredThrough = tieredThroughHere({
      watermarkSeq,
      watermarkTerm: await this.#store.getMeta<number>(WATERMARK_TERM_META),
      leadingTerm: this.#membership.isLeader() ? this.#membership.term() : undefined,
      termStarts: this.#store.termStarts(),
    });
    this.#retentionHeldByTerm = tieredThrough < watermarkSeq ? { throughSeq: tieredThrough, watermarkSeq } : null;
    await this.#store.countTieredThrough(tieredThrough);
    return tieredThrough;
  }

  /** Where named events are in the tier (any location that ever received tiered events): eventId → seq, source and action. */
  async findTieredRecords(eventIds: ReadonlySet<string>): Promise<Map<string, TieredRecordRef[]>> {
    return findTieredRecords(await this.tierSources(), eventIds);
  }

  /**
   * The copies the tier holds of events a client re-sent after local retention deleted them
   * (the store's TieredCopyLookup): each looked for only in files whose event-time bounds hold
   * its time, and answered as the stored JSON of one copy, by eventId. What the tier cannot
   * answer for is answered as "no copy": an outage of the bucket never stops ingest (the log
   * keeps collecting), so those events are stored as new, counted and logged, and the tier may
   * then hold them twice. A location that cannot be read (an old target whose bucket or
   * credentials are gone, a damaged file) costs only the events not found elsewhere: the
   * copies the readable ones hold are still answered. The lookups take turns
   * (ResendLookupGate): when too many wait, this throws ResendLookupsBusy.
   */
  async tieredCopies(eventTimes: ReadonlyMap<string, number>, sender?: string): Promise<ReadonlyMap<string, string>> {
    let found: Map<string, TieredRecordRef[]>;
    const unreadable = new Map<string, string>();
    try {
      const sources = await this.tierSources();
      const timeoutMs = this.#resendLookupTimeoutMs;
      const noteUnreadable = (source: TierSource, err: unknown) => unreadable.set(source.name, err instanceof Error ? err.message : String(err));
      const lookup = () => findTieredRecords(sources, new Set(eventTimes.keys()), undefined, { eventTimes, wholeRows: true, unreadable: noteUnreadable });
      found = await this.#resendLookups.run(lookup, timeoutMs, `the tier did not answer within ${timeoutMs} ms (auditlake.ingest.resend.lookup.timeout.ms)`, sender);
    } catch (err) {
      // Every turn taken and the queue full: the request is refused (429), nothing stored.
      if (err instanceof ResendLookupsBusy) throw err;
      this.#uncheckedResends([...eventTimes.keys()], err instanceof Error ? err.message : String(err));
      return new Map();
    }
    if (unreadable.size > 0) {
      const notFound = [...eventTimes.keys()].filter((eventId) => !found.has(eventId));
      if (notFound.length > 0) this.#uncheckedResends(notFound, [...unreadable].map(([name, message]) => `${name}: ${message}`).join('; '));
    }
    const copies = new Map<string, string>();
    for (const [eventId, refs] of found) {
      const event = refs.find((ref) => ref.event !== undefined)?.event;
      if (event !== undefined) copies.set(eventId, JSON.stringify(event));
    }
    return copies;
  }

  /** Counts and logs (at most every RESEND_WARNING_INTERVAL_MS) re-sends that could not be looked for in the tier. */
  #uncheckedResends(eventIds: readonly string[], reason: string): void {
    this.#metrics.resendsUnchecked.inc(eventIds.length);
    const nowMs = Date.now();
    if (nowMs - this.#resendWarnedMs < RESEND_WARNING_INTERVAL_MS) return;
    this.#resendWarnedMs = nowMs;
    this.#log.warn(
      { events: eventIds.length, eventIds: eventIds.slice(0, 20), err: reason },
      `events that may re-send one retention deleted (an id it kept, or timed at or before the newest one it deleted) could not be looked for in the tier (it could not be read): stored as new, so if one re-sends an event already tiered, the tier holds it twice (counted in auditlake_events_resend_unchecked_total; this warning at most every ${RESEND_WARNING_INTERVAL_MS / 1000} s)`,
    );
  }

  /** Every location that ever received tiered events, as reader sources. */
  async tierSources(): Promise<TierSource[]> {
    return this.#sourcesOf(await this.#tieredLocations());
  }

  /**
   * The tiered locations, read again only when replicated metadata changed since the last read
   * (every search asks; a LevelDB read each time was a native round trip before any event).
   */
  async #tieredLocations(): Promise<TieredLocation[]> {
    // The version before the read: a change landing during it makes the next call read again.
    const metaVersion = this.#store.metaVersion;
    if (this.#locations?.metaVersion === metaVersion) return this.#locations.locations;
    const locations = await readTieredLocations(this.#store);
    this.#locations = { metaVersion, locations };
    return locations;
  }

  /**
   * One source per location as it was described, not per place: two descriptions of one place
   * are read twice (their rows de-duplicated by eventId), because two that only look alike (one
   * endpoint whose buckets differ by credentials: Ceph RGW tenants) must never be read as one
   * and lose a location's rows from search (review).
   */
  #sourcesOf(locations: readonly TieredLocation[]): TierSource[] {
    return locations.map((location) => {
      const key = tieredLocationKey(location);
      let source = this.#sources.get(key);
      if (!source) {
        source =
          location.mode === 'iceberg'
            ? new IcebergTierSource(this.connections, { identifier: location.path, location: location.location, connectionId: location.connectionId })
            : new ParquetTierSource(this.connections, location);
        this.#sources.set(key, source);
      }
      return source;
    });
  }

  /**
   * Event time from which everything is certainly still local (tiers can be skipped above it):
   * above what retention may delete by now, and above the newest event time it did delete. The
   * second counts when the clock stood ahead while a prune ran (it deleted past what today's
   * clock allows): a page from local events alone then missed the tiered ones in between.
   */
  localCompleteFromMs(nowMs: number): number {
    const effective = this.#settings.effective;
    const byRetention = nowMs - Math.min(effective.retentionDays, effective.tierRetainLocalDays) * DAY_MS;
    const pruned = this.#store.prunedTimeMax;
    return pruned === undefined ? byRetention : Math.max(byRetention, pruned + 1);
  }

  /**
   * tierStatus, from memory: the sweep's state and the watermark (replicated metadata the store
   * keeps in memory), the backlog by subtraction, the last deferred count and the ledger. It
   * waits for no LevelDB read (whose thread pool ingest keeps busy) and no scan, so the settings
   * GET and the metrics scrape stay fast under load.
   */
  async status(): Promise<TierStatusView> {
    const status = await this.sweeper.status();
    const effective = this.#settings.effective;
    const backlog = await this.#store.countAfter(status.watermark.seq);
    const deferred = effective.tierMode === 'none' ? 0 : await this.#deferred.read({ nowMs: Date.now(), retentionMs: effective.retentionDays * DAY_MS, watermarkSeq: status.watermark.seq });
    // Totals the ledger keeps as events arrive: no entry is built.
    const { sources, sourcesWithGaps, missing, retiredSources, retiredMissing } = this.#store.sourceLedgerSummary();
    const ledger = { sources, sourcesWithGaps, missing, sourcesRetired: retiredSources, retiredMissing };
    // Standbys holding tiering back: those the lowest of them holds no more than, while the log goes further.
    const held = this.#membership.heldByStandbys();
    const heldByStandbys = held !== undefined && held.throughSeq < this.#store.position.lastSeq ? held : null;
    return { ...status, backlog, deferred, ledger, erasureHoldSeq: this.#erasureHoldSeq, retentionHeldByTerm: this.#retentionHeldByTerm, heldByStandbys };
  }

  async close(): Promise<void> {
    await this.maintenance.close();
    await this.sweeper.close();
    await this.#encoder?.close();
    await this.#maintenanceEncoder?.close();
    // Each reader source owns worker threads (its free-text prefilter pool).
    const sources = [...this.#sources.values()];
    this.#sources.clear();
    await Promise.all(sources.map((source) => source.close()));
    this.connections.close();
  }
}

/** The `audit:AdoptTier` event recording an admin's adoption of a tier's entries. */
function adoptionRecord(adoption: AdoptedTier, by: string, nowMs: number): EncodedEvent {
  return encodeEvent({
    eventId: newEventId(nowMs),
    userId: by,
    source: SELF_SOURCE,
    action: 'audit:AdoptTier',
    resource: adoption.target,
    decision: '',
    tables: [],
    query: '',
    // Settings records among the adopted entries state changes made on the log that tiered
    // them: the adoption takes entries, not that log's settings, so this record says so.
    details: `throughSeq=${adoption.throughSeq}, commonSeq=${adoption.commonSeq}, adopted=${adoption.adopted}, moved=${adoption.moved}${adoption.settingsRecordSeqs === undefined ? '' : `; the settings records adopted at seq ${adoption.settingsRecordSeqs.join(', ')} state changes not in force here: the settings in force are this node's own`}`,
    timestamp: nowMs,
  });
}
