import { TextProbePool, type ByteSource } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { liveParquetFiles, readerClockMs, readParquetLog, type ParquetLog } from './parquet-compaction.js';
import type { S3Connections } from './s3-connections.js';
import { parseS3Location } from './s3-location.js';
import type { TieredLocation } from './tiered-location.js';
import type { TierFile, TierSource } from './tier-source.js';

/**
 * A Parquet location as the reader sees it: the files its commit markers list (never an
 * uncommitted file a crashed or deposed leader left), with its compactions applied in order (a
 * compacted day's new files instead of the files they replaced), read through ranged GETs. The
 * first listing starts from the newest checkpoint of the log and fetches only the markers after
 * it; markers never change once written, so each is fetched once per source, and a source kept
 * for months moves to each newer checkpoint (readParquetLog), so it holds about one checkpoint
 * interval of markers. Footers are not cached here: data files written before attempt-unique
 * names could be rewritten under the same key.
 */
export class ParquetTierSource implements TierSource {
  readonly name: string;
  /** Searches a free-text scan's pages on other cores; its workers exit when idle. */
  readonly textProbes = new TextProbePool();
  readonly #connections: S3Connections;
  readonly #location: TieredLocation;
  #log: ParquetLog | undefined;
  /** The live files of the log last listed, and what of that log they follow from (#liveFiles). */
  #live: { of: LogShape; files: TierFile[] } | undefined;
  readonly #now: () => number;

  /** `options.now`: the clock that ages what it read (with the wall clock: stale when either says so), so a source idle for long looks for the newest checkpoint (KNOWN_LOG_STALE_MS). */
  constructor(connections: S3Connections, location: TieredLocation, options: { now?: () => number } = {}) {
    this.#connections = connections;
    this.#location = location;
    this.#now = options.now ?? readerClockMs;
    this.name = location.path;
  }

  #objects() {
    const location = parseS3Location(this.#location.path);
    if (!location) throw new AuditError(AuditErrorCode.TABLE_INVALID, `not an s3://bucket/prefix location: ${this.#location.path}`);
    return { location, objects: this.#connections.bucket(this.#location.connectionId, location.bucket) };
  }

  async listFiles(): Promise<TierFile[]> {
    const { location, objects } = this.#objects();
    // Commit markers after the last one read, and compaction markers listed every time (one LIST), each fetched once.
    this.#log = await readParquetLog(objects, location, this.#log, { nowMs: this.#now() });
    return this.#liveFiles(this.#log);
  }

  /**
   * The log's live files, worked out again only when the log changed: from a checkpoint of a
   * year's tier (~340,000 files) that took ~240 ms of one turn, for every search page and every
   * re-send lookup between two commits (year-of-operation review). A log re-read with nothing
   * new keeps its checkpoint and marker objects; markers and compactions are only added (in key
   * order), so the same checkpoint, counts and last ones are the same log.
   */
  #liveFiles(log: ParquetLog): TierFile[] {
    const of = logShape(log);
    const live = this.#live;
    if (live !== undefined && sameShape(live.of, of)) return live.files;
    const files = liveParquetFiles(log).files;
    this.#live = { of, files };
    return files;
  }

  /** Commit markers held for the next listing (those after the checkpoint it reads from). */
  get markersHeld(): number {
    return this.#log?.markers.length ?? 0;
  }

  /** Stops the prefilter's worker threads (they also exit on their own when idle). */
  async close(): Promise<void> {
    await this.textProbes.close();
  }

  /** The marker records each file's size, so opening one makes no HEAD request. */
  async open(file: TierFile): Promise<ByteSource> {
    return this.#objects().objects.byteSource(file.key, file.bytes);
  }
}

/** What tells one read of a Parquet log from another (ParquetTierSource.#liveFiles). */
interface LogShape {
  checkpoint: unknown;
  markers: number;
  lastMarker: unknown;
  compactions: number;
  lastCompaction: unknown;
}

function logShape(log: ParquetLog): LogShape {
  return { checkpoint: log.checkpoint, markers: log.markers.length, lastMarker: log.markers.at(-1), compactions: log.compactions.length, lastCompaction: log.compactions.at(-1) };
}

function sameShape(a: LogShape, b: LogShape): boolean {
  return a.checkpoint === b.checkpoint && a.markers === b.markers && a.lastMarker === b.lastMarker && a.compactions === b.compactions && a.lastCompaction === b.lastCompaction;
}
