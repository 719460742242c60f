import {
  checkManifestCounts,
  checkPartitionSummary,
  currentSnapshot,
  dayDate,
  decodeLongBound,
  decodeManifestInSlices,
  decodeManifestList,
  ManifestEntryStatus,
  ParquetFooterCache,
  TextProbePool,
  TS_FIELD_ID,
  EVENT_ID_FIELD_ID,
  visitManifestInSlices,
  type ByteSource,
  type DataFile,
  type IcebergTableMetadata,
} from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { ObjectStore } from './object-store.js';
import { icebergTableAt, metadataVersionKey, s3Key, versionHintKey, type IcebergTableRef } from './iceberg-table-ref.js';
import { loadIcebergTable } from './iceberg-table.js';
import type { S3Connections } from './s3-connections.js';
import type { TierFile, TierSource } from './tier-source.js';

/** Data file footers kept per table (a footer of a day file is tens of KB parsed). */
export const FOOTER_CACHE_ENTRIES_MAX = 1024;

/** A live data file with what its manifest entry declares of it (its `data_file`: counts, bounds, partition). */
export interface DeclaredTierFile extends TierFile {
  declared: DataFile;
}

/** The live files of one table version, as listed from its metadata. */
interface ListedVersion {
  version: number;
  /** Size of `v<version>.metadata.json` when it was read. */
  metadataBytes: number;
  files: TierFile[];
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
export class IcebergTierSource implements TierSource {
  readonly name: string;
  readonly footers = new ParquetFooterCache(FOOTER_CACHE_ENTRIES_MAX);
  /** Searches a free-text scan's pages on other cores; its workers exit when idle. */
  readonly textProbes = new TextProbePool();
  readonly #connections: S3Connections;
  readonly #table: IcebergTableRef;
  /**
   * The live files of each manifest of the version listed last, by path: a commit adds one
   * manifest and keeps the others, so the next listing decodes only the new one. Only the
   * manifests the current snapshot names are kept (each listing replaces the map): every sweep
   * commit writes a manifest and maintenance replaces them all, so a map that kept every one
   * grew by about 11 KB a commit for as long as the node ran. Held as a search plans by them
   * (TierFile: a key, a day, four numbers), not as decoded entries: an entry with every
   * column's counts and bounds took ~11 KB of heap, so a table of years of files (hundreds of
   * thousands) took gigabytes.
   */
  #manifests = new Map<string, TierFile[]>();
  #listed: ListedVersion | undefined;

  constructor(connections: S3Connections, table: { identifier: string; location: string; connectionId: string }) {
    this.#connections = connections;
    this.#table = icebergTableAt(table);
    this.name = table.identifier;
  }

  #objects(): ObjectStore {
    return this.#connections.bucket(this.#table.connectionId, this.#table.s3.bucket);
  }

  /** True when `listed` is still the table's current version (see the class comment). */
  async #stillCurrent(objects: ObjectStore, listed: ListedVersion): Promise<boolean> {
    const [hint, newer, current] = await Promise.all([
      objects.find(versionHintKey(this.#table)).then((bytes) => (bytes ? new TextDecoder().decode(bytes).trim() : '')),
      objects.exists(metadataVersionKey(this.#table, listed.version + 1)),
      objects.head(metadataVersionKey(this.#table, listed.version)),
    ]);
    return hint === String(listed.version) && !newer && current?.bytes === listed.metadataBytes;
  }

  async listFiles(): Promise<TierFile[]> {
    const objects = this.#objects();
    const listed = this.#listed;
    if (listed && (await this.#stillCurrent(objects, listed))) return listed.files;
    this.#listed = undefined;
    const loaded = await this.#load(objects);
    const files = await this.#liveTierFiles(objects, loaded.metadata);
    const head = await objects.head(metadataVersionKey(this.#table, loaded.version));
    this.#listed = { version: loaded.version, metadataBytes: head?.bytes ?? -1, files };
    return files;
  }

  /**
   * For the verifier: the current version's live files, each with what its manifest entry
   * declares of it, once every manifest's entry in the manifest list is checked against the
   * manifest — its counts and content (checkManifestCounts) and its partition summary
   * (checkPartitionSummary); either throws AUDIT_INTEGRITY_MISMATCH naming the manifest list
   * and the manifest. Not kept between calls: a search
   * needs neither.
   */
  async listDeclaredFiles(): Promise<DeclaredTierFile[]> {
    const objects = this.#objects();
    const loaded = await this.#load(objects);
    const snapshot = currentSnapshot(loaded.metadata);
    if (!snapshot) return [];
    const listKey = s3Key(this.#table, snapshot['manifest-list']);
    const declared: DeclaredTierFile[] = [];
    for (const manifest of decodeManifestList(await objects.get(listKey)).files) {
      const entries = (await decodeManifestInSlices(await objects.get(s3Key(this.#table, manifest.manifest_path)))).entries;
      checkManifestCounts(`manifest list ${listKey}`, manifest, entries);
      checkPartitionSummary(`manifest list ${listKey}`, manifest, entries);
      for (const entry of entries) if (entry.status !== ManifestEntryStatus.DELETED) declared.push({ ...this.#tierFileOf(entry.data_file), declared: entry.data_file });
    }
    return declared;
  }

  async #load(objects: ObjectStore): Promise<NonNullable<Awaited<ReturnType<typeof loadIcebergTable>>>> {
    const loaded = await loadIcebergTable(objects, this.#table);
    if (!loaded) throw new AuditError(AuditErrorCode.TABLE_INVALID, `table ${this.#table.identifier} has no metadata at ${this.#table.location}`);
    return loaded;
  }

  /** The live data files of the current snapshot, as a search plans by them; decodes only the manifests not held from the last listing. */
  async #liveTierFiles(objects: ObjectStore, metadata: IcebergTableMetadata): Promise<TierFile[]> {
    const snapshot = currentSnapshot(metadata);
    if (!snapshot) return [];
    const list = decodeManifestList(await objects.get(s3Key(this.#table, snapshot['manifest-list'])));
    const files: TierFile[] = [];
    const current = new Map<string, TierFile[]>();
    for (const manifest of list.files) {
      let live = this.#manifests.get(manifest.manifest_path);
      if (live === undefined) {
        const kept: TierFile[] = [];
        // Each entry mapped as its block is read: only the small TierFiles are held.
        await visitManifestInSlices(await objects.get(s3Key(this.#table, manifest.manifest_path)), (entry) => {
          if (entry.status !== ManifestEntryStatus.DELETED) kept.push(this.#tierFileOf(entry.data_file));
        });
        live = kept;
      }
      current.set(manifest.manifest_path, live);
      for (const file of live) files.push(file);
    }
    this.#manifests = current;
    return files;
  }

  /** Decoded manifests held for the next listing (those of the version listed last). */
  get manifestsHeld(): number {
    return this.#manifests.size;
  }

  /** Stops the prefilter's worker threads (they also exit on their own when idle). */
  async close(): Promise<void> {
    await this.textProbes.close();
  }

  /** The manifest records each file's size, so opening one makes no HEAD request. */
  async open(file: TierFile): Promise<ByteSource> {
    return this.#objects().byteSource(file.key, file.bytes);
  }

  /** A live data file as a search plans by it: its key in the bucket, day, size, rows and `ts` bounds. */
  #tierFileOf(file: DataFile): TierFile {
    const lower = file.lower_bounds?.find((b) => b.key === TS_FIELD_ID)?.value;
    const upper = file.upper_bounds?.find((b) => b.key === TS_FIELD_ID)?.value;
    // Copied: a decoded bound views its manifest block, which a kept copy would hold whole.
    const idMin = file.lower_bounds?.find((b) => b.key === EVENT_ID_FIELD_ID)?.value;
    const idMax = file.upper_bounds?.find((b) => b.key === EVENT_ID_FIELD_ID)?.value;
    const day = file.partition.event_time_day;
    return {
      key: s3Key(this.#table, file.file_path),
      eventDate: day === null ? '' : dayDate(day),
      rows: file.record_count,
      bytes: file.file_size_in_bytes,
      // Without bounds the file cannot be skipped: widest range.
      tsMin: lower ? Number(decodeLongBound(lower)) : 0,
      tsMax: upper ? Number(decodeLongBound(upper)) : Number.MAX_SAFE_INTEGER,
      ...(idMin === undefined ? {} : { eventIdMin: Uint8Array.from(idMin) }),
      ...(idMax === undefined ? {} : { eventIdMax: Uint8Array.from(idMax) }),
    };
  }
}
