import { currentSnapshot, type TieredEvent } from '@auditlake/format';
import type { FoundCheckpoint, ShownKey, VerifyRecord } from '@auditlake/integrity';
import { parseSignedCheckpoint } from '@auditlake/integrity';
import {
  CHECKPOINT_SUMMARY_KEY,
  IcebergTierSource,
  icebergTableAt,
  loadIcebergTable,
  ParquetTierSource,
  parseS3Location,
  readIntegrityObjects,
  readMarkers,
  readTierHistory,
  S3Connections,
  tableWatermark,
  type TierSource,
} from '@auditlake/lake';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { TierLocationOption } from './verify-options.js';

/** What a tier gives the verifier: its records in seq order and the proof kept beside them. */
export interface TierProof {
  records: VerifyRecord[];
  legacyRows: number;
  files: number;
  checkpoints: FoundCheckpoint[];
  keys: ShownKey[];
  /** Where the tier's own commits say it ends (the newest commit's watermark). */
  head: { seq: number; where: string } | undefined;
}

const CONNECTION_ID = 'verify';

/**
 * Reads a tier from the bucket alone: every committed data file (through the Parquet commit
 * markers or the Iceberg table's current snapshot), the `_integrity/` objects beside it and,
 * for Iceberg, the checkpoint the current snapshot's summary carries.
 */
export async function readTierProof(tier: TierLocationOption): Promise<TierProof> {
  const location = parseS3Location(tier.location);
  if (!location) throw new AuditError(AuditErrorCode.BAD_REQUEST, `not an s3://bucket/prefix location: ${tier.location}`);
  const connections = new S3Connections(
    new Map([
      [
        CONNECTION_ID,
        { id: CONNECTION_ID, endpoint: tier.endpoint, region: tier.region, accessKeyId: tier.accessKeyId, secretAccessKey: tier.secretAccessKey, forcePathStyle: tier.endpoint !== '' },
      ],
    ]),
  );
  let source: (TierSource & { close(): Promise<void> }) | undefined;
  try {
    const objects = connections.bucket(CONNECTION_ID, location.bucket);
    const checkpoints: FoundCheckpoint[] = [];
    let head: TierProof['head'];
    if (tier.mode === 'parquet') {
      const newest = (await readMarkers(objects, location)).at(-1);
      if (newest !== undefined) head = { seq: newest.watermark.seq, where: `the newest commit marker of ${tier.location}` };
      source = new ParquetTierSource(connections, { mode: 'parquet', path: tier.location, connectionId: CONNECTION_ID });
    } else {
      const table = { identifier: tier.location, location: tier.location, connectionId: CONNECTION_ID };
      const loaded = await loadIcebergTable(objects, icebergTableAt(table));
      if (!loaded) throw new AuditError(AuditErrorCode.TABLE_INVALID, `no Iceberg table at ${tier.location} (no metadata/version-hint.text or v1.metadata.json)`);
      const summary = currentSnapshot(loaded.metadata)?.summary[CHECKPOINT_SUMMARY_KEY];
      if (summary !== undefined) checkpoints.push(found(summary, `the current snapshot's summary of ${tier.location}`));
      const watermark = tableWatermark(loaded);
      if (watermark !== undefined) head = { seq: watermark.seq, where: `the current snapshot's watermark of ${tier.location}` };
      source = new IcebergTierSource(connections, table);
    }
    const history = await readTierHistory(source);
    const proof = await readIntegrityObjects(objects, location.prefix);
    for (const object of proof.checkpoints) checkpoints.push(found(object.text, objects.url(object.key)));
    return {
      records: asVerifyRecords(history.records),
      legacyRows: history.legacyRows,
      files: history.files,
      checkpoints,
      keys: proof.keys.map((object) => ({ text: object.text, where: objects.url(object.key) })),
      head,
    };
  } finally {
    await source?.close();
    connections.close();
  }
}

/**
 * The tier's rows as the verifier takes them (each has a seq; a row without a term reads as term
 * 0), changed in place: a copy of every row was measured as a large share of verify's time.
 */
function asVerifyRecords(rows: TieredEvent[]): VerifyRecord[] {
  for (const row of rows) row.term ??= 0;
  return rows as VerifyRecord[];
}

function found(text: string, where: string): FoundCheckpoint {
  try {
    return { checkpoint: parseSignedCheckpoint(text), where };
  } catch (err) {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `the checkpoint in ${where} is damaged: ${(err as Error).message}`);
  }
}
