import {
  icebergTableAt,
  includesPlace,
  tieredLocationPlace,
  loadIcebergTable,
  readTieredLocations,
  parseS3Location,
  resolveIcebergTable,
  runIcebergMaintenance,
  runParquetMaintenance,
  storeNowAt,
  type MaintenanceRunFigures,
  type MaintenanceStep,
  type MarkerPacking,
  type S3Connections,
  type TieredLocation,
  type TierFileEncoder,
} from '@auditlake/lake';
import { snapshotMadeAtMs } from '@auditlake/format';
import { AuditError, AuditErrorCode, CronSchedule, type EffectiveSettings, type IcebergCatalogConfig } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import { CommitLock } from './commit-lock.js';
import { CronTimer, systemCronClock, type CronClock } from './cron-timer.js';
import { seenAt } from './seen-maps.js';

/** Run records kept per table (the newest first in answers). */
export const MAINTENANCE_RUNS_KEPT = 10;

/** One maintenance run as `GET /admin/audit/maintenance` and the `audit:TableMaintenance` event report it. */
export interface MaintenanceRun extends MaintenanceRunFigures, Partial<MarkerPacking> {
  table: string;
  startedMs: number;
  finishedMs: number;
  ok: boolean;
  error: string | null;
  /** Who asked: `cron` or the admin principal of `POST /admin/audit/maintenance/run`. */
  trigger: string;
  /** Why this scheduled run left compaction for a later one (the tier was behind), or null. */
  compactionDeferred: string | null;
}

/**
 * The longest a scheduled run defers compaction while the tier is behind: a tier that never
 * catches up still gets its files merged (once an hour, or at each run past that when the cron
 * is slower), so the number of small files a reader lists stays bounded.
 */
export const COMPACTION_DEFERRAL_MAX_MS = 60 * 60 * 1000;

/** The settings a registration runs with. */
export interface MaintenanceSettingsView {
  snapshotRetainLast: number;
  removeOrphanFiles: boolean;
  orphanMinAgeMs: number;
  targetFileSizeBytes: number;
  metadataPreviousVersionsMax: number;
}

/** A table (or Parquet location) registered for maintenance. */
export interface MaintenanceRegistration {
  /** `catalog.schema.table`, or `s3://bucket/prefix` for a Parquet location. */
  table: string;
  mode: TieredLocation['mode'];
  location: string;
  cron: string;
  settings: MaintenanceSettingsView;
  /** When cron fires next (only the leader runs it), or null. */
  nextRunMs: number | null;
  /** Newest first, at most {@link MAINTENANCE_RUNS_KEPT}. */
  runs: MaintenanceRun[];
}

export interface MaintenanceSchedulerOptions {
  store: AuditStore;
  connections: S3Connections;
  catalogs: ReadonlyMap<string, IcebergCatalogConfig>;
  settings: () => EffectiveSettings;
  isLeader: () => boolean;
  term: () => number;
  now?: () => number;
  /**
   * The clock how long this process has seen a table's replaced files and snapshots is counted on
   * (their grace holds by it too: #replacedSeenAt, #snapshotsSeenAt); one no step of the wall
   * clock moves (default `performance.now()`).
   */
  monotonicMs?: () => number;
  /** The clock and timers the cron runs on (default: `now` and the process's timers). */
  cronClock?: CronClock;
  /**
   * Orphan cleanup ages files by the object store's clock too (storeClockMs, one probe object per
   * cleanup), `offsetMs` added (a debug offset that moves maintenance's clock moves this one
   * alike). Without it the node's clock alone counts, and a node whose clock runs
   * `orphan.min.age.ms` ahead deletes the files of a commit another leader is still writing.
   */
  storeClock?: { offsetMs: number };
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Called after every run (the server records it as an audit event). */
  onRun?: (run: MaintenanceRun) => Promise<void>;
  /** Shared with the sweep, so the two never commit at once in this process: each step of a run takes one turn. */
  commitLock?: CommitLock;
  /** Encodes compacted files; a node passes its worker pool (default: on this thread). */
  encoder?: TierFileEncoder;
  /** Debug/test hook called at each step boundary of a run (and inside two steps). */
  onStep?: (step: MaintenanceStep) => void | Promise<void>;
  /**
   * Asked when a scheduled run starts: why compaction should wait (the sweep is catching up:
   * compaction would take CPU from it, and merge files the catch-up is still adding to), or
   * undefined. A scheduled run then skips compaction — at most COMPACTION_DEFERRAL_MAX_MS since
   * the table was last compacted — and runs its other steps; a run asked for always compacts.
   */
  compactionDeferral?: () => Promise<string | undefined>;
  /**
   * How long a run goes on starting compaction passes while small files are left
   * (`auditlake.audit.tier.maintenance.compaction.time.budget.ms`; default COMPACTION_RUN_TIME_BUDGET_MS).
   */
  compactionTimeBudgetMs?: number;
}

interface Entry {
  table: TieredLocation;
  cron: string;
  timer: CronTimer;
  runs: MaintenanceRun[];
  /** When a run last compacted it (or, before any did, when it was first registered here). */
  compactedMs: number;
  /**
   * False until compactedMs was read from the table (first scheduled run after registration):
   * a node that restarted knows nothing of runs before it, and would otherwise count an hour
   * from its start — across restarts, compaction could wait indefinitely.
   */
  compactedKnown: boolean;
}

/** The figures of a run that did nothing (it failed, or found nothing to maintain). */
const NO_WORK: MaintenanceRunFigures = {
  filesRewritten: 0,
  filesAdded: 0,
  compactionPasses: 0,
  smallFilesLeft: null,
  snapshotsExpired: 0,
  filesDeleted: 0,
  orphansDeleted: 0,
  checkpointsPacked: 0,
  logCheckpointsDeleted: 0,
  bytesBefore: 0,
  bytesAfter: 0,
};

function failure(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Registers tier locations for maintenance and runs it on the leader. With maintenance enabled,
 * the registered locations are the tiering target (an Iceberg table or a Parquet location) and
 * every location that ever received events, so a renamed target is added and the old one stays.
 * `refresh()` runs at start and after every settings save. Each registration has a CronTimer
 * on `audit.tier.maintenance.cron`; a tick on a node that is not the leader does nothing.
 * Runs are one at a time (a run holds a compaction's rows in memory), each fenced by the term
 * it started in, like the sweep. Each step of a run takes one turn of the commit lock it shares
 * with the sweep, and in it re-reads the table, builds its commit and commits; a sweep waits for
 * at most that turn, never for a whole run, and the lock's order gives a step its turn between
 * two sweeps however closely they follow each other. Its compaction reads and encodes (in the
 * encoder's worker threads) outside the lock. A commit that loses to another process's (a
 * deposed leader's) is rebuilt on the new version in the same turn when still valid.
 */
export class MaintenanceScheduler {
  readonly #options: MaintenanceSchedulerOptions;
  readonly #now: () => number;
  /** Per Parquet location: when this process first saw each of its replaced files (#replacedSeenAt). */
  readonly #replacedSeen = new Map<string, Map<string, number>>();
  /** Per Iceberg table: when this process first saw each of its snapshots (#snapshotsSeenAt). */
  readonly #snapshotsSeen = new Map<string, Map<number, number>>();
  readonly #cronClock: CronClock;
  readonly #lock: CommitLock;
  readonly #entries = new Map<string, Entry>();
  #queue: Promise<unknown> = Promise.resolve();
  /** The refresh running now, if any: refreshes run one at a time. */
  #refreshing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: MaintenanceSchedulerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#cronClock = options.cronClock ?? { wallMs: this.#now, setTimer: (callback, delayMs) => systemCronClock.setTimer(callback, delayMs) };
    this.#lock = options.commitLock ?? new CommitLock();
  }

  /**
   * The tables maintenance should cover now, by name. One place named two ways (another spelling
   * of the path, another connection to the endpoint, another catalog over the warehouse) is
   * registered once, under the name the settings give it now when they name it: registered
   * twice, two runs maintained one table.
   */
  async #wanted(settings: EffectiveSettings): Promise<Map<string, Entry['table']>> {
    const byPlace = new Map<string, Entry['table']>();
    if (!settings.maintenanceEnabled) return new Map();
    const add = (table: Entry['table']) => {
      const place = tieredLocationPlace(table, this.#options.connections);
      byPlace.delete(place);
      byPlace.set(place, table);
    };
    for (const location of await readTieredLocations(this.#options.store)) add(location);
    if (settings.tierMode === 'parquet' && parseS3Location(settings.tierParquetPath)) {
      add({ mode: 'parquet', path: settings.tierParquetPath, connectionId: settings.tierConnectionId });
    }
    if (settings.tierMode === 'iceberg') {
      try {
        const ref = resolveIcebergTable(settings.tierIcebergTable, this.#options.catalogs);
        add({ mode: 'iceberg', path: ref.identifier, location: ref.location, connectionId: ref.connectionId });
      } catch (err) {
        this.#options.log.warn({ err: failure(err) }, `table maintenance cannot register ${settings.tierIcebergTable}: ${failure(err)}`);
      }
    }
    return new Map([...byPlace.values()].map((table) => [table.path, table]));
  }

  /**
   * Brings the registrations in line with the settings and the tables that received events.
   * Refreshes run one at a time: two settings saves close together would otherwise both find
   * an entry with the old cron, both destroy it and both register one, and the map would keep
   * only the second timer while the first went on firing (maintenance twice per tick, and a
   * timer close() never stops).
   */
  refresh(): Promise<void> {
    const next = this.#refreshing.then(() => this.#refreshOnce());
    this.#refreshing = next.catch(() => undefined);
    return next;
  }

  async #refreshOnce(): Promise<void> {
    if (this.#closed) return;
    const settings = this.#options.settings();
    const wanted = await this.#wanted(settings);
    // close() may have run while the tiered locations were read: it registers nothing after.
    if (this.#closed) return;
    for (const [name, entry] of [...this.#entries]) {
      if (wanted.has(name) && entry.cron === settings.maintenanceCron) continue;
      this.#entries.delete(name);
      entry.timer.stop();
      // A new cron re-registers the table with its run history.
      if (wanted.has(name) && !this.#closed) this.#register(name, entry.table, settings.maintenanceCron, entry.runs, { compactedMs: entry.compactedMs, compactedKnown: entry.compactedKnown });
    }
    if (this.#closed) return;
    for (const [name, table] of wanted) if (!this.#entries.has(name)) this.#register(name, table, settings.maintenanceCron, []);
  }

  #register(name: string, table: Entry['table'], expression: string, runs: MaintenanceRun[], compacted = { compactedMs: this.#now(), compactedKnown: false }): void {
    let schedule: CronSchedule;
    try {
      schedule = CronSchedule.parse(expression);
    } catch (err) {
      // Settings refuse such a cron now; a stored one an older version accepted reaches here.
      throw new AuditError(AuditErrorCode.SETTINGS_INVALID, `table maintenance cannot register ${name}: audit.tier.maintenance.cron ${failure(err)}: ${expression}; set another cron`, { cause: err });
    }
    const timer = new CronTimer(
      schedule,
      async () => {
        if (!this.#options.isLeader()) return;
        await this.#enqueue(name, 'cron').catch(() => undefined);
      },
      this.#cronClock,
    );
    this.#entries.set(name, { table, cron: expression, timer, runs, ...compacted });
  }

  registrations(): MaintenanceRegistration[] {
    const settings = this.#options.settings();
    return [...this.#entries.entries()].map(([name, entry]) => ({
      table: name,
      mode: entry.table.mode,
      location: entry.table.mode === 'iceberg' ? entry.table.location : entry.table.path,
      cron: entry.cron,
      settings: {
        snapshotRetainLast: settings.maintenanceSnapshotRetainLast,
        removeOrphanFiles: settings.maintenanceRemoveOrphanFiles,
        orphanMinAgeMs: settings.maintenanceOrphanMinAgeMs,
        targetFileSizeBytes: settings.maintenanceTargetFileSizeBytes,
        metadataPreviousVersionsMax: settings.maintenanceMetadataPreviousVersionsMax,
      },
      nextRunMs: entry.timer.nextRunMs(),
      runs: [...entry.runs],
    }));
  }

  /**
   * Runs maintenance now on `table` (or every registered table), on the leader only; answers
   * the run records. AUDIT_NOT_LEADER on a standby, AUDIT_BAD_REQUEST for an unregistered table.
   */
  async runNow(trigger: string, table?: string): Promise<MaintenanceRun[]> {
    if (!this.#options.isLeader()) throw new AuditError(AuditErrorCode.NOT_LEADER, 'table maintenance runs on the leader only');
    const names = table === undefined ? [...this.#entries.keys()] : [table];
    for (const name of names) {
      if (!this.#entries.has(name)) throw new AuditError(AuditErrorCode.BAD_REQUEST, `table ${name} is not registered for maintenance (registered: ${[...this.#entries.keys()].join(', ') || 'none'})`);
    }
    const runs: MaintenanceRun[] = [];
    for (const name of names) runs.push(await this.#enqueue(name, trigger));
    return runs;
  }

  /** One run at a time, in the order asked. */
  #enqueue(name: string, trigger: string): Promise<MaintenanceRun> {
    const run = this.#queue.then(() => this.#run(name, trigger));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #run(name: string, trigger: string): Promise<MaintenanceRun> {
    const entry = this.#entries.get(name);
    if (!entry) throw new AuditError(AuditErrorCode.BAD_REQUEST, `table ${name} is no longer registered for maintenance`);
    const startedMs = this.#now();
    const term = this.#options.term();
    const compactionDeferred = await this.#compactionDeferred(entry, trigger, startedMs);
    let record: MaintenanceRun;
    try {
      const figures = await this.#maintain(entry.table, term, compactionDeferred === null);
      if (compactionDeferred === null) Object.assign(entry, { compactedMs: startedMs, compactedKnown: true });
      record = { table: name, startedMs, finishedMs: this.#now(), ok: true, error: null, trigger, compactionDeferred, ...figures };
      const left = record.smallFilesLeft ? ` (${record.smallFilesLeft} small files left for the next run after ${record.compactionPasses} compaction passes)` : '';
      this.#options.log.info({ ...record }, `table maintenance of ${name} finished${compactionDeferred === null ? '' : ` (compaction deferred: ${compactionDeferred})`}${left}`);
    } catch (err) {
      record = { table: name, startedMs, finishedMs: this.#now(), ok: false, error: failure(err), trigger, compactionDeferred, ...NO_WORK };
      this.#options.log.warn({ ...record }, `table maintenance of ${name} failed: ${failure(err)}`);
    }
    // Recorded in the audit log before it is listed: a run listed in GET /admin/audit/maintenance
    // was searched for at once and its audit event was not there yet (a CI run under load).
    await this.#options.onRun?.(record).catch((err: unknown) => this.#options.log.warn({ err: failure(err) }, 'recording a maintenance run failed'));
    entry.runs.unshift(record);
    entry.runs.splice(MAINTENANCE_RUNS_KEPT);
    return record;
  }

  /** Why a run of `entry` starting at `nowMs` leaves compaction out (see compactionDeferral), or null. */
  async #compactionDeferred(entry: Entry, trigger: string, nowMs: number): Promise<string | null> {
    if (trigger !== 'cron') return null;
    if (!entry.compactedKnown) {
      try {
        const compactedMs = await this.#lastCompactedMs(entry.table);
        Object.assign(entry, { compactedMs: compactedMs ?? entry.compactedMs, compactedKnown: true });
      } catch (err) {
        // The bucket unreadable (the run itself will fail too): the hour counts from the
        // registration meanwhile, and the next run asks the table again.
        this.#options.log.warn({ err: failure(err) }, `table maintenance: could not read when ${entry.table.path} was last compacted; counting from its registration: ${failure(err)}`);
      }
    }
    try {
      // A last compaction timed after now (this clock stepped back since, or the node that
      // compacted ran ahead) cannot say an hour has not passed: deferring until this clock
      // caught up deferred for the whole excursion (review).
      if (nowMs - entry.compactedMs >= COMPACTION_DEFERRAL_MAX_MS || entry.compactedMs > nowMs) return null;
      return (await this.#options.compactionDeferral?.()) ?? null;
    } catch (err) {
      // Not knowing whether the tier is behind is no reason to skip a step.
      this.#options.log.warn({ err: failure(err) }, `table maintenance: could not tell whether to defer compaction: ${failure(err)}`);
      return null;
    }
  }

  /**
   * When the Iceberg table was last compacted, from its snapshots: the newest that replaced data files;
   * with none, the table's first snapshot when it is still retained (never compacted since it
   * was created); otherwise 0 (compacted, if ever, before every retained snapshot: long ago).
   * Times are when the snapshots were made (snapshotMadeAtMs), not their stamps, which run ahead
   * of the clock after a commit stamped by one that was ahead.
   * Undefined for a Parquet location or a table not created yet (the registration time stands).
   */
  async #lastCompactedMs(location: TieredLocation): Promise<number | undefined> {
    if (location.mode !== 'iceberg') return undefined;
    const table = icebergTableAt({ identifier: location.path, location: location.location, connectionId: location.connectionId });
    const loaded = await loadIcebergTable(this.#options.connections.bucket(table.connectionId, table.s3.bucket), table);
    const snapshots = loaded?.metadata.snapshots ?? [];
    if (snapshots.length === 0) return undefined;
    let replaced: number | undefined;
    // A compaction replaces data files; a manifest rewrite is a `replace` too, with none.
    for (const snapshot of snapshots) {
      if (snapshot.summary['operation'] === 'replace' && Number(snapshot.summary['deleted-data-files'] ?? 0) > 0) replaced = Math.max(replaced ?? 0, snapshotMadeAtMs(snapshot));
    }
    if (replaced !== undefined) return replaced;
    const root = snapshots.find((snapshot) => snapshot['parent-snapshot-id'] === undefined);
    return root === undefined ? 0 : snapshotMadeAtMs(root);
  }

  /** One run over a table or Parquet location with the current settings, fenced by `term`. */
  async #maintain(location: TieredLocation, term: number, compact: boolean): Promise<MaintenanceRunFigures & Partial<MarkerPacking>> {
    const settings = this.#options.settings();
    const policy = {
      snapshotRetainLast: settings.maintenanceSnapshotRetainLast,
      removeOrphanFiles: settings.maintenanceRemoveOrphanFiles,
      orphanMinAgeMs: settings.maintenanceOrphanMinAgeMs,
      targetFileSizeBytes: settings.maintenanceTargetFileSizeBytes,
      metadataPreviousVersionsMax: settings.maintenanceMetadataPreviousVersionsMax,
      compact,
      ...(this.#options.compactionTimeBudgetMs === undefined ? {} : { compactionTimeBudgetMs: this.#options.compactionTimeBudgetMs }),
    };
    const fence = {
      term,
      mayCommit: () => !this.#closed && this.#options.isLeader() && this.#options.term() === term,
      // Each step re-reads, rebuilds and commits in one turn of the lock the sweep holds per
      // batch: the sweep waits for at most one step, and never takes a step's version between
      // its rebuild and its commit (rebuilt outside the lock, steps lost every retry to a sweep
      // committing back to back under sustained ingest).
      serialize: <T>(turn: () => Promise<T>) => this.#lock.run(turn),
    };
    const clocks = this.#options.monotonicMs ? { monotonicMs: this.#options.monotonicMs } : {};
    const hooks = {
      ...(this.#options.onStep ? { onStep: this.#options.onStep } : {}),
      ...(this.#options.encoder ? { encoder: this.#options.encoder } : {}),
    };
    // The target is registered as soon as it is set; what it holds is this log's only once this
    // log's sweep committed there, or found there what it counts as tiered, after checking it is
    // this log's (tieredLocations). Before that the location has nothing of
    // this log to maintain — and when the target was set by mistake to another cluster's
    // location, which the sweep refuses, a run would compact, expire and clean that cluster's
    // table (review).
    if (!includesPlace(await readTieredLocations(this.#options.store), location, this.#options.connections)) {
      this.#options.log.info({ table: location.path }, `table maintenance of ${location.path}: this log has tiered nothing there yet, nothing to do (maintenance starts once its sweep has committed there)`);
      return NO_WORK;
    }
    if (location.mode === 'parquet') {
      const s3 = parseS3Location(location.path);
      if (!s3) throw new AuditError(AuditErrorCode.TABLE_INVALID, `not an s3://bucket/prefix location: ${location.path}`);
      const objects = this.#options.connections.bucket(location.connectionId, s3.bucket);
      return runParquetMaintenance({ objects, location: s3, fence, now: this.#now, replacedSeen: this.#replacedSeenAt(location.path), ...clocks, ...storeNowAt(this.#options.storeClock, objects, s3.prefix), ...hooks }, policy);
    }
    const table = icebergTableAt({ identifier: location.path, location: location.location, connectionId: location.connectionId });
    const objects = this.#options.connections.bucket(table.connectionId, table.s3.bucket);
    return runIcebergMaintenance({ objects, table, fence, now: this.#now, snapshotsSeen: this.#snapshotsSeenAt(location.path), ...clocks, ...storeNowAt(this.#options.storeClock, objects, table.s3.prefix), ...hooks }, policy);
  }

  /**
   * When this process first saw each replaced file of the Parquet location `path` (its runs keep
   * it: runParquetMaintenance deletes a replaced file only once seen replaced for the grace period).
   */
  #replacedSeenAt(path: string): Map<string, number> {
    return seenAt(this.#replacedSeen, path);
  }

  /**
   * When this process first saw each snapshot of the Iceberg table `path` (its runs keep it: the
   * expiry keeps the parent of a compaction until seen for the grace period, as
   * #replacedSeenAt does a Parquet location's replaced files).
   */
  #snapshotsSeenAt(path: string): Map<number, number> {
    return seenAt(this.#snapshotsSeen, path);
  }

  /** Stops every cron timer and waits for a running run; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    // A refresh under way registers nothing once it sees #closed; wait for it so no timer it
    // registered before that is missed below.
    await this.#refreshing;
    for (const entry of this.#entries.values()) entry.timer.stop();
    this.#entries.clear();
    await this.#queue.catch(() => undefined);
  }
}

