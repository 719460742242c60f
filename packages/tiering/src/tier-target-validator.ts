import { AuditError, AuditErrorCode, type EffectiveSettings, type IcebergCatalogConfig } from '@auditlake/model';
import { ensureNamespace, parseS3Location, resolveIcebergTable, type S3Connections } from '@auditlake/lake';

function unusable(target: string, reason: string): AuditError {
  return new AuditError(AuditErrorCode.SETTINGS_INVALID, `audit tier target ${target} is not usable: ${reason}`);
}

function describe(err: unknown): string {
  if (err instanceof AuditError) return err.message;
  if (err instanceof Error) {
    const name = err.name && err.name !== 'Error' ? `${err.name}: ` : '';
    return `${name}${err.message || 'no message'}`;
  }
  return String(err);
}

/**
 * Checks a tier target when settings are saved, as the reference does, instead of accepting
 * it and failing in the background: the location must parse, its connection or catalog must
 * be configured, and its bucket must answer. Throws a 400-mapped error with the reference's
 * wording; the caller then persists nothing.
 */
export async function validateTierTarget(settings: EffectiveSettings, connections: S3Connections, catalogs: ReadonlyMap<string, IcebergCatalogConfig>): Promise<void> {
  if (settings.tierMode === 'parquet') {
    const path = settings.tierParquetPath;
    const location = parseS3Location(path);
    if (!location) throw new AuditError(AuditErrorCode.SETTINGS_INVALID, `audit.tier.parquet.path must be s3://bucket/prefix: ${path}`);
    if (settings.tierConnectionId === '') throw new AuditError(AuditErrorCode.SETTINGS_INVALID, 'audit.tier.connectionId is required when audit.tier.mode=parquet');
    if (!connections.has(settings.tierConnectionId)) throw unusable(path, `No S3 connection config for audit tier connection '${settings.tierConnectionId}'`);
    try {
      await connections.bucket(settings.tierConnectionId, location.bucket).checkReachable();
    } catch (err) {
      throw unusable(path, `bucket ${location.bucket} cannot be reached through connection '${settings.tierConnectionId}': ${describe(err)}`);
    }
    return;
  }
  if (settings.tierMode === 'iceberg') {
    const target = settings.tierIcebergTable;
    const catalogName = target.split('.')[0] ?? '';
    const catalog = catalogs.get(catalogName);
    if (!catalog) throw unusable(target, `No catalog config for audit tier catalog '${catalogName}'`);
    const warehouse = parseS3Location(catalog.warehouse);
    if (!warehouse) throw unusable(target, `catalog '${catalogName}' warehouse must be s3://bucket/prefix: ${catalog.warehouse}`);
    if (!connections.has(catalog.connectionId)) throw unusable(target, `No S3 connection config for catalog '${catalogName}' connection '${catalog.connectionId}'`);
    try {
      await connections.bucket(catalog.connectionId, warehouse.bucket).checkReachable();
      // A valid target is accepted and its namespace created as part of the check.
      await ensureNamespace(connections, resolveIcebergTable(target, catalogs));
    } catch (err) {
      throw unusable(target, `warehouse ${catalog.warehouse} cannot be reached: ${describe(err)}`);
    }
  }
}
