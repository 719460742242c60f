// Goal: only ADDED manifest entries inherit sequence numbers from their manifest (spec "Sequence Number Inheritance"); an EXISTING or DELETED entry without them is refused naming the manifest and the file, so a rewrite never writes invented numbers out.
import { ManifestEntryStatus, type DataFile, type ManifestEntry, type ManifestFile } from '@auditlake/format';
import { describe, expect, it } from 'vitest';
import { resolveEntry } from '../src/iceberg-table-files.js';

const MANIFEST = { manifest_path: 's3://b/t/metadata/m1.avro', sequence_number: 7, added_snapshot_id: 70 } as ManifestFile;
const FILE = { file_path: 's3://b/t/data/f1.parquet' } as DataFile;
const entry = (status: ManifestEntryStatus, sequence: number | null): ManifestEntry => ({ status, snapshot_id: null, sequence_number: sequence, file_sequence_number: sequence, data_file: FILE });

describe('resolveEntry', () => {
  it('gives an ADDED entry its manifest\'s numbers and snapshot, and any entry the snapshot id', () => {
    expect(resolveEntry(entry(ManifestEntryStatus.ADDED, null), MANIFEST)).toMatchObject({ snapshot_id: 70, sequence_number: 7, file_sequence_number: 7 });
    expect(resolveEntry(entry(ManifestEntryStatus.EXISTING, 3), MANIFEST)).toMatchObject({ snapshot_id: 70, sequence_number: 3, file_sequence_number: 3 });
  });

  it.each([
    [ManifestEntryStatus.EXISTING, 'EXISTING'],
    [ManifestEntryStatus.DELETED, 'DELETED'],
  ] as const)('refuses a %s entry without sequence numbers, naming the manifest and the file', (status, name) => {
    expect(() => resolveEntry(entry(status, null), MANIFEST)).toThrow(
      `Iceberg manifest s3://b/t/metadata/m1.avro is not usable: its ${name} entry for s3://b/t/data/f1.parquet has no sequence number, which only ADDED entries may inherit`,
    );
  });
});
