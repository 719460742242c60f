import { erasuresNotDone, readTieredLocations, tieredLocationKey, tieredLocationPlace, icebergTableAt, loadIcebergTable, parseS3Location, type MaintenanceContext, type MaintenanceStep, type ParquetCompactionContext, type S3Connections, type TieredLocation, type TierFileEncoder } from '@auditlake/lake';
import type { AuditStore } from '@auditlake/store';
import { applyIcebergErasures, applyParquetErasures } from './tier-erasure.js';

export interface EarlierTargetErasureOptions {
  store: AuditStore;
  connections: S3Connections;
  now: () => number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** A location that failed is left alone this long, doubling with each failure in a row up to the max. */
  backoffInitialMs: number;
  backoffMaxMs: number;
  encoder?: TierFileEncoder;
  onStep?: (step: MaintenanceStep) => void | Promise<void>;
}

/** What a pass over the earlier targets did, per location it rewrote. */
export interface EarlierTargetErasureResult {
  location: TieredLocation;
  erasures: number;
  filesRewritten: number;
  rowsRewritten: number;
}

/**
 * Erasure for the locations that received events before the current target: a table or path
 * renamed in the settings, or the other mode's. The reader still serves their rows, so an
 * erasure must reach them as it reaches the current target. No batch goes to them any more, so
 * every erasure record of the log up to its last seq applies at once (the current target waits
 * until it holds the record, see applyIcebergErasures).
 *
 * Found through the store's index of erasure records: a pass with no new erasure record since
 * the last one reads nothing from S3. Where each location was checked through is kept in
 * memory, so a new leader or a restart checks each location once against every erasure record
 * the log holds (what was applied is recorded in the location itself: an Iceberg table's
 * erasure cursor, a Parquet location's done markers).
 */
export class EarlierTargetErasure {
  readonly #options: EarlierTargetErasureOptions;
  /** Per location (its JSON), the log seq through which its erasures are applied by this process. */
  readonly #checkedThrough = new Map<string, number>();
  #appliedThrough = 0;
  /** Per location (its JSON) that failed last time: failures in a row, and when to try again. */
  readonly #failing = new Map<string, { failures: number; retryAtMs: number }>();

  constructor(options: EarlierTargetErasureOptions) {
    this.#options = options;
  }

  /**
   * After the last pass: the log seq through which every erasure record is applied to every
   * earlier target (the lowest of their checks; the log's last seq then when there is none).
   * 0 before the first pass.
   */
  get appliedThrough(): number {
    return this.#appliedThrough;
  }

  /**
   * Applies the log's erasure records to every remembered location but `current`, fenced by
   * `fence` (the sweep's: this term, while leading). A location that fails is logged and left
   * alone for a backoff (the sweep's, doubling per failure in a row); it never fails tiering to
   * the current target.
   */
  async apply(current: TieredLocation | undefined, fence: MaintenanceContext['fence'], metadataLogEntriesMax: number): Promise<EarlierTargetErasureResult[]> {
    const { store, log } = this.#options;
    const known = await readTieredLocations(store);
    // The current target named another way (an alias spelling, another connection to its
    // endpoint) is the current target, whose erasures the sweep applies: taken for an earlier one,
    // its erasure cursor would move ahead of what the sweep has written there. Every other
    // description is applied to, and backs off, on its own: keyed by place, one description's
    // failure (a revoked key) held back another that works, and the erasure never reached the
    // place while search read it through that other one (review).
    const placeOf = (location: TieredLocation) => tieredLocationPlace(location, this.#options.connections);
    const currentPlace = current === undefined ? undefined : placeOf(current);
    const head = store.position.lastSeq;
    const results: EarlierTargetErasureResult[] = [];
    let appliedThrough = head;
    for (const location of known) {
      if (placeOf(location) === currentPlace) continue;
      const key = tieredLocationKey(location);
      const checked = this.#checkedThrough.get(key) ?? 0;
      if (checked >= head) continue;
      if (!this.#options.connections.has(location.connectionId)) {
        // Its connection was removed from the configuration: this node can no longer reach the
        // location (searches report it unavailable), and waiting for it would hold retention
        // back for good. Removing the connection is how an operator detaches an old target.
        log.warn({ target: location.path, connectionId: location.connectionId }, `Audit tiering: erasures are not applied to ${location.path}, an earlier tier target: its S3 connection '${location.connectionId}' is no longer configured`);
        this.#checkedThrough.set(key, head);
        continue;
      }
      // An unreachable location is not asked again by every sweep (a backlog sweeps back to
      // back, and each attempt may take the client's whole timeout): it waits out its backoff.
      const failing = this.#failing.get(key);
      if (failing !== undefined && this.#options.now() < failing.retryAtMs) {
        appliedThrough = Math.min(appliedThrough, checked);
        continue;
      }
      const seqs = await store.erasureRecordSeqs(checked, head);
      try {
        if (seqs.length > 0) {
          const result = location.mode === 'iceberg' ? await this.#applyToTable(location, head, fence, metadataLogEntriesMax) : await this.#applyToParquet(location, seqs, fence);
          if (result.erasures > 0) {
            results.push({ location, ...result });
            log.info(
              { ...result, target: location.path },
              `Audit tiering: ${result.erasures} erasure ${result.erasures === 1 ? 'record' : 'records'} applied to ${location.path}, an earlier tier target (${result.rowsRewritten} rows in ${result.filesRewritten} files rewritten)`,
            );
          }
        }
        this.#checkedThrough.set(key, head);
        this.#failing.delete(key);
      } catch (err) {
        const failures = (failing?.failures ?? 0) + 1;
        const retryMs = Math.min(this.#options.backoffMaxMs, this.#options.backoffInitialMs * 2 ** (failures - 1));
        this.#failing.set(key, { failures, retryAtMs: this.#options.now() + retryMs });
        log.warn(
          { err: err instanceof Error ? err.message : String(err), target: location.path, failures },
          `Audit tiering: applying erasures to ${location.path}, an earlier tier target, failed (retried in ${Math.round(retryMs / 1000)}s; until it succeeds, local retention keeps the erasure records it has not applied and everything after them)`,
        );
      }
      appliedThrough = Math.min(appliedThrough, this.#checkedThrough.get(key) ?? 0);
    }
    this.#appliedThrough = appliedThrough;
    return results;
  }

  async #applyToTable(location: Extract<TieredLocation, { mode: 'iceberg' }>, head: number, fence: MaintenanceContext['fence'], metadataLogEntriesMax: number): Promise<Omit<EarlierTargetErasureResult, 'location'>> {
    const table = icebergTableAt({ identifier: location.path, location: location.location, connectionId: location.connectionId });
    const objects = this.#options.connections.bucket(table.connectionId, table.s3.bucket);
    const loaded = await loadIcebergTable(objects, table);
    if (loaded === undefined) return { erasures: 0, filesRewritten: 0, rowsRewritten: 0 };
    const context: MaintenanceContext = { objects, table, fence, now: this.#options.now, metadataLogEntriesMax, ...this.#hooks() };
    const result = await applyIcebergErasures(context, loaded, this.#options.store, { throughSeq: head });
    return { erasures: result.erasures, filesRewritten: result.filesRewritten, rowsRewritten: result.rowsRewritten };
  }

  async #applyToParquet(location: Extract<TieredLocation, { mode: 'parquet' }>, seqs: readonly number[], fence: MaintenanceContext['fence']): Promise<Omit<EarlierTargetErasureResult, 'location'>> {
    const s3 = parseS3Location(location.path);
    if (!s3) return { erasures: 0, filesRewritten: 0, rowsRewritten: 0 };
    const context: ParquetCompactionContext = { objects: this.#options.connections.bucket(location.connectionId, s3.bucket), location: s3, fence, now: this.#options.now, ...this.#hooks() };
    const pending = await erasuresNotDone(context, seqs);
    if (pending.length === 0) return { erasures: 0, filesRewritten: 0, rowsRewritten: 0 };
    const result = await applyParquetErasures(context, this.#options.store, pending);
    return { erasures: result.erasures, filesRewritten: result.filesRewritten, rowsRewritten: result.rowsRewritten };
  }

  #hooks(): { encoder?: TierFileEncoder; onStep?: (step: MaintenanceStep) => void | Promise<void> } {
    return { ...(this.#options.encoder ? { encoder: this.#options.encoder } : {}), ...(this.#options.onStep ? { onStep: this.#options.onStep } : {}) };
  }
}
