import { currentSnapshot, dayDate, decodeLongBound, decodeManifest, decodeManifestList, type ByteSource, type ManifestEntry } from '@auditlake/format';
import type { S3Connections } from './object-store.js';
import type { ParquetTierFile } from './parquet-tier-source.js';
import { loadIcebergTable, s3Key, type IcebergTableRef } from './iceberg-table.js';
import { parseS3Location } from './s3-location.js';

/** Field id of `ts` (event time, epoch ms) in the audit schema: its bounds prune files. */
const TS_FIELD_ID = 9;
/** Manifest entry status DELETED: the file is no longer in the table. */
const DELETED = 2;

/**
 * An Iceberg table as the reader sees it: current snapshot → manifest list → manifests →
 * live data files, each with its `day(event_time)` partition and the `ts` bounds the manifest
 * records, so the reader skips files outside from/to without opening them. Manifests never
 * change once written, so each is fetched once per source.
 */
export class IcebergTierSource {
  readonly name: string;
  readonly #connections: S3Connections;
  readonly #table: IcebergTableRef;
  readonly #manifests = new Map<string, ManifestEntry[]>();

  constructor(connections: S3Connections, table: { identifier: string; location: string; connectionId: string }) {
    const s3 = parseS3Location(table.location);
    if (!s3) throw new Error(`not an s3:// table location: ${table.location}`);
    this.#connections = connections;
    this.#table = { identifier: table.identifier, location: table.location, s3, connectionId: table.connectionId, namespaceKey: '' };
    this.name = table.identifier;
  }

  #objects() {
    return this.#connections.bucket(this.#table.connectionId, this.#table.s3.bucket);
  }

  async listFiles(): Promise<ParquetTierFile[]> {
    const objects = this.#objects();
    const loaded = await loadIcebergTable(objects, this.#table);
    if (!loaded) throw new Error(`table ${this.#table.identifier} has no metadata at ${this.#table.location}`);
    const snapshot = currentSnapshot(loaded.metadata);
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
          // Without bounds the file cannot be skipped: widest range.
          tsMin: lower ? Number(decodeLongBound(lower)) : 0,
          tsMax: upper ? Number(decodeLongBound(upper)) : Number.MAX_SAFE_INTEGER,
        });
      }
    }
    return files;
  }

  async open(file: ParquetTierFile): Promise<ByteSource> {
    return this.#objects().byteSource(file.key);
  }
}
