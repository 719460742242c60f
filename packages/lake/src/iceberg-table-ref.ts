import { AuditError, AuditErrorCode, type IcebergCatalogConfig } from '@auditlake/model';
import { joinKey, parseS3Location, type S3Location } from './s3-location.js';

/** Where a `catalog.schema.table` lives: `<warehouse>/<schema>/<table>/` (a file-system catalog layout). */
export interface IcebergTableRef {
  identifier: string;
  /** `s3://bucket/warehouse/schema/table`, no trailing slash. */
  location: string;
  s3: S3Location;
  connectionId: string;
  namespaceKey: string;
}

/** Resolves `catalog.schema.table` against the configured catalogs. */
export function resolveIcebergTable(identifier: string, catalogs: ReadonlyMap<string, IcebergCatalogConfig>): IcebergTableRef {
  const [catalogName = '', schema = '', table = ''] = identifier.split('.');
  const catalog = catalogs.get(catalogName);
  if (!catalog) throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `No catalog config for audit tier catalog '${catalogName}'`);
  const warehouse = parseS3Location(catalog.warehouse);
  if (!warehouse) throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `catalog '${catalogName}' warehouse must be s3://bucket/prefix: ${catalog.warehouse}`);
  const prefix = joinKey(warehouse.prefix, `${schema}/${table}`);
  return {
    identifier,
    location: `s3://${warehouse.bucket}/${prefix}`,
    s3: { bucket: warehouse.bucket, prefix },
    connectionId: catalog.connectionId,
    namespaceKey: joinKey(warehouse.prefix, `${schema}/`),
  };
}

/** A table as the reader knows it: its identifier, resolved location and connection. */
export function icebergTableAt(table: { identifier: string; location: string; connectionId: string }): IcebergTableRef {
  const s3 = parseS3Location(table.location);
  if (!s3) throw new AuditError(AuditErrorCode.TABLE_INVALID, `not an s3:// table location: ${table.location}`);
  return { identifier: table.identifier, location: table.location, s3, connectionId: table.connectionId, namespaceKey: '' };
}

/**
 * The bucket key of an `s3://bucket/key` path inside the table's location, or undefined when the
 * path is elsewhere: in another bucket, beside the table (`…/audit2/…` is not under `…/audit`),
 * or with a `.` or `..` segment. The paths come from the table's
 * own files (metadata, manifest lists, manifests), which whoever may write the table's folder
 * can craft: a manifest naming another team's object as a data file made snapshot expiry delete
 * it with this node's credentials.
 */
export function tableKeyOf(table: IcebergTableRef, path: string): string | undefined {
  const bucket = `s3://${table.s3.bucket}/`;
  if (!path.startsWith(bucket)) return undefined;
  const key = path.slice(bucket.length);
  const own = table.s3.prefix === '' ? '' : `${table.s3.prefix}/`;
  if (!key.startsWith(own) || key.length === own.length) return undefined;
  // An empty segment stays inside (`t//data/…`: Spark with Iceberg 0.13, pyiceberg before 0.7
  // and some Trino versions wrote such paths); `.` and `..` are refused, in case any layer
  // between here and the bucket resolves them.
  return key.split('/').some((segment) => segment === '.' || segment === '..') ? undefined : key;
}

/** The bucket key of a path inside the table's location (tableKeyOf); any other is refused: a reader never guesses around a table it cannot trust. */
export function s3Key(table: IcebergTableRef, path: string): string {
  const key = tableKeyOf(table, path);
  if (key === undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `path outside the table's location ${table.location}: ${path}`);
  return key;
}

/**
 * The bucket keys of those `paths` inside the table's location: what a delete may touch. A path
 * elsewhere is left alone (auditlake writes nothing outside the table, so nothing of its own is
 * there to delete); the caller counts only what it deleted.
 */
export function deletableKeys(table: IcebergTableRef, paths: Iterable<string>): string[] {
  const keys: string[] = [];
  for (const path of paths) {
    const key = tableKeyOf(table, path);
    if (key !== undefined) keys.push(key);
  }
  return keys;
}

/** The key of the table's `metadata/<name>`. */
export function metadataFileKey(table: IcebergTableRef, name: string): string {
  return joinKey(table.s3.prefix, `metadata/${name}`);
}

/** The key of `v<version>.metadata.json`, the commit object of that version. */
export function metadataVersionKey(table: IcebergTableRef, version: number): string {
  return metadataFileKey(table, `v${version}.metadata.json`);
}

/** The key of `version-hint.text`. */
export function versionHintKey(table: IcebergTableRef): string {
  return metadataFileKey(table, 'version-hint.text');
}
