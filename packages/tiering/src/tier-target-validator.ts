import { AuditError, AuditErrorCode, type EffectiveSettings, type IcebergCatalogConfig } from '@auditlake/model';
import { ensureNamespace, parseS3Location, resolveIcebergTable, type S3Connections, type S3Location, type TieredLocation } from '@auditlake/lake';

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

/** Names for a message: the known ones, or `none`. */
function known(names: readonly string[]): string {
  return names.length === 0 ? 'none' : names.join(', ');
}

/**
 * The target keys that name configuration (`audit.tier.connectionId` an S3 connection,
 * `audit.tier.iceberg.table` a catalog) are checked against it when they are saved, whether or
 * not their mode is on: a name that is not configured would otherwise wait, stored, until a
 * later enable refused it — or, on a node whose configuration differs, until the sweep failed
 * on it. The mode in force checks its own keys fully below (and the catalog's connection and
 * reachability, which need it on). `changed`: the keys this save changes (absent: all); the
 * Iceberg table is checked only when changed, since its default names catalog `ice`, which a
 * node that never tiers to Iceberg need not configure.
 */
function refuseUnknownReferences(settings: EffectiveSettings, connections: S3Connections, catalogs: ReadonlyMap<string, IcebergCatalogConfig>, changed: ReadonlySet<string> | undefined): void {
  const id = settings.tierConnectionId;
  if (settings.tierMode !== 'parquet' && id !== '' && (changed === undefined || changed.has('audit.tier.connectionId')) && !connections.has(id)) {
    throw new AuditError(
      AuditErrorCode.SETTINGS_INVALID,
      `audit.tier.connectionId ${JSON.stringify(id)} names no configured S3 connection (known: ${known(connections.ids)}); configure auditlake.s3.connections.${id}.* or name a known one — nothing was saved`,
    );
  }
  const table = settings.tierIcebergTable;
  if (settings.tierMode !== 'iceberg' && table !== '' && changed?.has('audit.tier.iceberg.table') === true) {
    const catalog = table.split('.')[0] ?? '';
    if (!catalogs.has(catalog)) {
      throw new AuditError(
        AuditErrorCode.SETTINGS_INVALID,
        `audit.tier.iceberg.table ${JSON.stringify(table)} names catalog '${catalog}', which is not configured (known: ${known([...catalogs.keys()])}); configure auditlake.iceberg.catalogs.${catalog}.* or name a known one — nothing was saved`,
      );
    }
  }
}

/** A tier location with what to call it in a message. */
interface NamedLocation {
  mode: 'parquet' | 'iceberg';
  location: S3Location;
  /** e.g. `Parquet location s3://b/p`, `Iceberg table c.s.t (s3://b/w/s/t)` */
  name: string;
}

function parquetLocation(path: string): NamedLocation | undefined {
  const location = parseS3Location(path);
  return location && { mode: 'parquet', location, name: `Parquet location s3://${location.bucket}/${location.prefix}` };
}

function icebergLocation(identifier: string, tableLocation: string): NamedLocation | undefined {
  const location = parseS3Location(tableLocation);
  return location && { mode: 'iceberg', location, name: `Iceberg table ${identifier} (s3://${location.bucket}/${location.prefix})` };
}

/** The configured table's location, when its catalog resolves it (else nothing to compare). */
function configuredIcebergLocation(identifier: string, catalogs: ReadonlyMap<string, IcebergCatalogConfig>): NamedLocation | undefined {
  try {
    const ref = resolveIcebergTable(identifier, catalogs);
    return icebergLocation(ref.identifier, ref.location);
  } catch {
    return undefined;
  }
}

/** Whether `inner` is `outer` or lies below it (same bucket; an empty prefix is the whole bucket). */
function within(inner: S3Location, outer: S3Location): boolean {
  if (inner.bucket !== outer.bucket) return false;
  return outer.prefix === '' || inner.prefix === outer.prefix || inner.prefix.startsWith(`${outer.prefix}/`);
}

/**
 * Refuses a tier target that lies inside, or contains, another tier location: one that ever
 * received tiered events (maintenance covers each of them) or the other mode's configured
 * location. Each location's maintenance lists everything below it and cleans up what it takes
 * for its own, so nested locations put each other's files at risk (and readers of the outer one
 * would list the inner one's). The same location in the same mode (the target itself, as it
 * received events before) is no conflict. The connection is not compared: two connections may
 * reach the same bucket.
 */
function refuseNestedTarget(key: string, target: NamedLocation, others: readonly NamedLocation[]): void {
  for (const other of others) {
    const same = other.location.bucket === target.location.bucket && other.location.prefix === target.location.prefix;
    if (same && other.mode === target.mode) continue;
    const relation = same ? 'is the same location as' : within(target.location, other.location) ? 'lies inside' : within(other.location, target.location) ? 'contains' : undefined;
    if (relation === undefined) continue;
    throw new AuditError(
      AuditErrorCode.SETTINGS_INVALID,
      `${key}: the ${target.name} ${relation} the ${other.name}; one location's table maintenance would treat the other's files as its own. Choose a location outside every other tier location (a sibling prefix or another bucket).`,
    );
  }
}

/** The locations a target must stay clear of: those that received events, and the other mode's. */
function otherLocations(settings: EffectiveSettings, catalogs: ReadonlyMap<string, IcebergCatalogConfig>, tiered: readonly TieredLocation[]): NamedLocation[] {
  const others: NamedLocation[] = [];
  for (const location of tiered) {
    const named = location.mode === 'parquet' ? parquetLocation(location.path) : icebergLocation(location.path, location.location);
    if (named) others.push(named);
  }
  if (settings.tierMode === 'parquet' && settings.tierIcebergTable !== '') {
    const named = configuredIcebergLocation(settings.tierIcebergTable, catalogs);
    if (named) others.push(named);
  }
  if (settings.tierMode === 'iceberg' && settings.tierParquetPath !== '') {
    const named = parquetLocation(settings.tierParquetPath);
    if (named) others.push(named);
  }
  return others;
}

/**
 * Checks a tier target when settings are saved, as the reference does, instead of accepting
 * it and failing in the background: the location must parse, must not lie inside or contain
 * another tier location (`tiered`, every location that received events, or the other mode's
 * configured one), its connection or catalog must be configured, and its bucket must answer.
 * Throws a 400-mapped error with the reference's wording; the caller then persists nothing.
 */
export async function validateTierTarget(
  settings: EffectiveSettings,
  connections: S3Connections,
  catalogs: ReadonlyMap<string, IcebergCatalogConfig>,
  tiered: readonly TieredLocation[] = [],
  changed?: ReadonlySet<string>,
): Promise<void> {
  refuseUnknownReferences(settings, connections, catalogs, changed);
  if (settings.tierMode === 'parquet') {
    const path = settings.tierParquetPath;
    const location = parseS3Location(path);
    if (!location) throw new AuditError(AuditErrorCode.SETTINGS_INVALID, `audit.tier.parquet.path must be s3://bucket/prefix: ${path}`);
    refuseNestedTarget('audit.tier.parquet.path', parquetLocation(path)!, otherLocations(settings, catalogs, tiered));
    if (settings.tierConnectionId === '') throw new AuditError(AuditErrorCode.SETTINGS_INVALID, 'audit.tier.connectionId is required when audit.tier.mode=parquet');
    if (!connections.has(settings.tierConnectionId)) throw unusable(path, `No S3 connection config for audit tier connection '${settings.tierConnectionId}' (known: ${known(connections.ids)})`);
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
    const table = configuredIcebergLocation(target, catalogs);
    if (table) refuseNestedTarget('audit.tier.iceberg.table', table, otherLocations(settings, catalogs, tiered));
    try {
      await connections.bucket(catalog.connectionId, warehouse.bucket).checkReachable();
      // A valid target is accepted and its namespace created as part of the check.
      await ensureNamespace(connections, resolveIcebergTable(target, catalogs));
    } catch (err) {
      throw unusable(target, `warehouse ${catalog.warehouse} cannot be reached: ${describe(err)}`);
    }
  }
}
