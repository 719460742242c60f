import { currentSnapshot, dayDate, decodeLongBound, decodeManifest, decodeManifestList, ParquetFooterCache, TextProbePool, type ByteSource, type ManifestEntry } from '@auditlake/format';
import type { ObjectStore, S3Connections } from './object-store.js';
import type { ParquetTierFile } from './parquet-tier-source.js';
import { loadIcebergTable, s3Key, type IcebergTableRef } from './iceberg-table.js';
import { joinKey, parseS3Location } from './s3-location.js';

/** Field id of `ts` (event time, epoch ms) in the audit schema: its bounds prune files. */
const TS_FIELD_ID = 9;
/** Manifest entry status DELETED: the file is no longer in the table. */
const DELETED = 2;
/** Data file footers kept per table (a footer of a day file is tens of KB parsed). */
export const FOOTER_CACHE_ENTRIES_MAX = 1024;

/** The live files of one table version, as listed from its metadata. */
interface ListedVersion {
  version: number;
  /** Size of `v<version>.metadata.json` when it was read. */
  metadataBytes: number;
  files: ParquetTierFile[];
}

function isMissing(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

/**
 * An Iceberg table as the reader sees it: current snapshot → manifest list → manifests →
 * live data files, each with its `day(event_time)` partition and the `ts` bounds the manifest
 * records, so the reader skips files outside from/to without opening them.
 *
 * What is kept between searches, and why it stays right: manifests and data files never change
 * once written (each is fetched once per source); the file list is kept with the table version
 * it came from, and each search first checks that version is still current — the version hint
 * says so, no `v(N+1).metadata.json` exists (the same forward probe a load does, as a hint
 * can lag behind a commit) and `vN.metadata.json` still has the size it had (metadata files
 * are immutable; this catches one replaced or damaged in place, which must be reported, not
 * hidden by the cache) — three small requests in parallel instead of hint, probe, metadata
 * and manifest list one after another. A new commit is seen by the next search.
 */
export class IcebergTierSource {
  readonly name: string;
  readonly footers = new ParquetFooterCache(FOOTER_CACHE_ENTRIES_MAX);
  /** Searches a free-text scan's pages on other cores; its workers exit when idle. */
  readonly textProbes = new TextProbePool();
  readonly #connections: S3Connections;
  readonly #table: IcebergTableRef;
  readonly #manifests = new Map<string, ManifestEntry[]>();
  #listed: ListedVersion | undefined;

  constructor(connections: S3Connections, table: { identifier: string; location: string; connectionId: string }) {
    const s3 = parseS3Location(table.location);
    if (!s3) throw new Error(`not an s3:// table location: ${table.location}`);
    this.#connections = connections;
    this.#table = { identifier: table.identifier, location: table.location, s3, connectionId: table.connectionId, namespaceKey: '' };
    this.name = table.identifier;
  }

  #objects(): ObjectStore {
    return this.#connections.bucket(this.#table.connectionId, this.#table.s3.bucket);
  }

  #metadataKey(version: number): string {
    return joinKey(this.#table.s3.prefix, `metadata/v${version}.metadata.json`);
  }

  /** True when `listed` is still the table's current version (see the class comment). */
  async #stillCurrent(objects: ObjectStore, listed: ListedVersion): Promise<boolean> {
    const [hint, newer, metadataBytes] = await Promise.all([
      objects.get(joinKey(this.#table.s3.prefix, 'metadata/version-hint.text')).then(
        (bytes) => new TextDecoder().decode(bytes).trim(),
        (err: unknown) => {
          if (isMissing(err)) return '';
          throw err;
        },
      ),
      objects.size(this.#metadataKey(listed.version + 1)).then(
        () => true,
        (err: unknown) => {
          if (isMissing(err)) return false;
          throw err;
        },
      ),
      objects.size(this.#metadataKey(listed.version)).catch((err: unknown) => {
        if (isMissing(err)) return -1;
        throw err;
      }),
    ]);
    return hint === String(listed.version) && !newer && metadataBytes === listed.metadataBytes;
  }

  async listFiles(): Promise<ParquetTierFile[]> {
    const objects = this.#objects();
    const listed = this.#listed;
    if (listed && (await this.#stillCurrent(objects, listed))) return listed.files;
    this.#listed = undefined;
    const loaded = await loadIcebergTable(objects, this.#table);
    if (!loaded) throw new Error(`table ${this.#table.identifier} has no metadata at ${this.#table.location}`);
    const files = await this.#liveFiles(objects, loaded.metadata);
    this.#listed = { version: loaded.version, metadataBytes: await objects.size(this.#metadataKey(loaded.version)), files };
    return files;
  }

  async #liveFiles(objects: ObjectStore, metadata: Parameters<typeof currentSnapshot>[0]): Promise<ParquetTierFile[]> {
    const snapshot = currentSnapshot(metadata);
    if (!snapshot) return [];
    const list = decodeManifestList(await objects.get(s3Key(this.#table, snapshot['manifest-list'])));
    const files: ParquetTierFile[] = [];
    for (const manifest of list.files) {
      let entries = this.#manifests.get(manifest.manifest_path);
      if (!entries) {
        entries = decodeManifest(await objects.get(s3Key(this.#table, manifest.manifest_path))).entries;
        this.#manifests.set(manifest.manifest_path, entries);
      }
      for (const entry of entries) {
        if (entry.status === DELETED) continue;
        const file = entry.data_file;
        const lower = file.lower_bounds?.find((b) => b.key === TS_FIELD_ID)?.value;
        const upper = file.upper_bounds?.find((b) => b.key === TS_FIELD_ID)?.value;
        const day = file.partition.event_time_day;
        files.push({
          key: s3Key(this.#table, file.file_path),
          eventDate: day === null ? '' : dayDate(day),
          rows: file.record_count,
          bytes: file.file_size_in_bytes,
          // Without bounds the file cannot be skipped: widest range.
          tsMin: lower ? Number(decodeLongBound(lower)) : 0,
          tsMax: upper ? Number(decodeLongBound(upper)) : Number.MAX_SAFE_INTEGER,
        });
      }
    }
    return files;
  }

  /** Stops the prefilter's worker threads (they also exit on their own when idle). */
  async close(): Promise<void> {
    await this.textProbes.close();
  }

  async open(file: ParquetTierFile): Promise<ByteSource> {
    const objects = this.#objects();
    const byteLength = file.bytes;
    // The manifest records the size: no HEAD request to learn it.
    if (byteLength === undefined) return objects.byteSource(file.key);
    return { byteLength, slice: (start: number, end?: number) => objects.getRange(file.key, start, end ?? byteLength) };
  }
}
