// Assembles an Iceberg table of tiered events in memory (object key → bytes), the way the tiering
// leader will: per append one Parquet file per day, one manifest, a manifest list carrying the
// earlier manifests, and vN.metadata.json + version-hint.text.
import type { StoredEvent } from '@auditlake/model';
import {
  addedEntry,
  appendSnapshot,
  dataFileFromParquet,
  dayOrdinal,
  dayPartitionPath,
  decodeManifestList,
  encodeAuditParquet,
  encodeManifest,
  encodeManifestList,
  icebergParquetKvMetadata,
  manifestFileFor,
  newTableMetadata,
  summarizeAddedFiles,
  watermarkSummary,
  type IcebergTableMetadata,
  type ManifestFile,
} from '../src/index.js';
import { seededRandom } from './events.js';

/** An Iceberg table as objects: absolute URI → bytes. */
export interface MemoryTable {
  location: string;
  objects: Map<string, Uint8Array>;
  /** Metadata of each version, v1 first. */
  versions: IcebergTableMetadata[];
  /** Events of each append, in append order. */
  appends: StoredEvent[][];
  /** Manifest-list bytes of each append. */
  manifestLists: Uint8Array[];
  /** Manifest bytes of each append. */
  manifests: Uint8Array[];
}

const encoder = new TextEncoder();

export const WRITER_ID = 'test-cluster/audit.events';

/**
 * Builds the table: v1 (empty) and one version per append. `appends` are the event batches;
 * each batch may span several days. Randomness (ids, uuids, sync markers) comes from `seed`.
 */
export function buildMemoryTable(location: string, appends: StoredEvent[][], seed: number, startMs = 1_767_225_600_000): MemoryTable {
  const random = seededRandom(seed);
  const uuid = (): string => {
    const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  };
  const syncMarker = (): Uint8Array => Uint8Array.from({ length: 16 }, () => Math.floor(random() * 256));
  const objects = new Map<string, Uint8Array>();
  const metadataPath = (version: number): string => `${location}/metadata/v${version}.metadata.json`;

  let metadata = newTableMetadata({ location, tableUuid: uuid(), nowMs: startMs });
  const versions = [metadata];
  objects.set(metadataPath(1), encoder.encode(JSON.stringify(metadata, null, 2)));
  const manifestLists: Uint8Array[] = [];
  const manifests: Uint8Array[] = [];
  let carried: ManifestFile[] = [];
  let seqMax = 0;

  appends.forEach((events, index) => {
    const snapshotId = 1 + Math.floor(random() * (Number.MAX_SAFE_INTEGER - 1));
    const sequenceNumber = metadata['last-sequence-number'] + 1;
    const byDay = new Map<number, StoredEvent[]>();
    for (const event of events) {
      const day = dayOrdinal(event.timestamp);
      byDay.set(day, [...(byDay.get(day) ?? []), event]);
    }
    const dataFiles = [...byDay.entries()].map(([day, dayEvents], fileIndex) => {
      const path = `${location}/data/${dayPartitionPath(day)}/${uuid()}-${String(fileIndex).padStart(5, '0')}.parquet`;
      const bytes = encodeAuditParquet(dayEvents, { kvMetadata: icebergParquetKvMetadata(), rowGroupSize: 97 });
      objects.set(path, bytes);
      return dataFileFromParquet({ events: dayEvents, filePath: path, fileSizeBytes: bytes.byteLength, parquetBytes: bytes });
    });
    const entries = dataFiles.map((file) => addedEntry(file, snapshotId));
    const manifestPath = `${location}/metadata/${uuid()}-m0.avro`;
    const manifest = encodeManifest(entries, { syncMarker: syncMarker() });
    objects.set(manifestPath, manifest);
    manifests.push(manifest);

    const parent = metadata['current-snapshot-id'] === -1 ? null : metadata['current-snapshot-id'];
    const listFiles = [
      ...carried,
      manifestFileFor({ manifestPath, manifestLengthBytes: manifest.byteLength, entries, snapshotId, sequenceNumber }),
    ];
    const manifestList = encodeManifestList(listFiles, { snapshotId, parentSnapshotId: parent, sequenceNumber, syncMarker: syncMarker() });
    const manifestListPath = `${location}/metadata/snap-${snapshotId}-1-${uuid()}.avro`;
    objects.set(manifestListPath, manifestList);
    manifestLists.push(manifestList);
    // The next snapshot carries this list's rows verbatim, read back as the leader would.
    carried = decodeManifestList(manifestList).files;

    seqMax = Math.max(seqMax, ...events.map((event) => event.seq));
    const lastEvent = events.reduce((a, b) => (a.seq > b.seq ? a : b));
    metadata = appendSnapshot(metadata, {
      snapshotId,
      manifestListPath,
      nowMs: startMs + (index + 1) * 1000,
      addedFiles: summarizeAddedFiles(dataFiles),
      previousMetadataPath: metadataPath(index + 1),
      summaryExtra: watermarkSummary({ seq: BigInt(seqMax), writerId: WRITER_ID, leaderTerm: 3, ingestTs: lastEvent.ingestTs }),
    });
    versions.push(metadata);
    objects.set(metadataPath(index + 2), encoder.encode(JSON.stringify(metadata, null, 2)));
  });
  // Digits only, no newline (pyiceberg builds a wrong path otherwise).
  objects.set(`${location}/metadata/version-hint.text`, encoder.encode(String(versions.length)));
  return { location, objects, versions, appends, manifestLists, manifests };
}
