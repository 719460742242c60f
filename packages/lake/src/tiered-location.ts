import type { S3Connections } from './s3-connections.js';
import { parseS3Location } from './s3-location.js';

/** Replicated-metadata name of every location that ever received tiered events. */
export const TIERED_LOCATIONS_META = 'tieredLocations';

/** A place tiered events were written to, remembered so the reader never loses it. */
export type TieredLocation =
  | {
      mode: 'parquet';
      /** `s3://bucket/prefix` */
      path: string;
      connectionId: string;
    }
  | {
      mode: 'iceberg';
      /** `catalog.schema.table` as configured when it received events. */
      path: string;
      /** The table's resolved location, kept so it stays readable if the catalog changes. */
      location: string;
      connectionId: string;
    };

/** What keys a location as it was described (mode, path, connection id, table location). */
export function tieredLocationKey(location: TieredLocation): string {
  return JSON.stringify(location);
}

/** What tells where a connection sends its requests: S3Connections (endpointOf; undefined when not configured). */
export type Endpoints = Pick<S3Connections, 'endpointOf'>;

/**
 * Where a location's objects are, spelled one way: its mode, its connection's endpoint, bucket and
 * key prefix. Descriptions of one place have one answer: `s3://b/p` and `s3://b/p/`, two
 * connection ids to one endpoint (credentials rotated under a new id), two catalogs with one
 * warehouse. Keyed by its description instead, a target set back to a place this log tiered to
 * under another spelling was taken for another log's tier once retention had deleted the rows
 * it would be checked against, and tiering stopped (review). A connection no longer configured
 * stays apart by its id.
 */
export function tieredLocationPlace(location: TieredLocation, endpoints: Endpoints): string {
  const s3 = parseS3Location(location.mode === 'iceberg' ? location.location : location.path);
  const endpoint = endpoints.endpointOf(location.connectionId) ?? `connection:${location.connectionId}`;
  return JSON.stringify(s3 ? [location.mode, endpoint, s3.bucket, s3.prefix] : [location.mode, endpoint, location.path]);
}

/** Whether `location` is a place among `known` (it received tiered events). */
export function includesPlace(known: readonly TieredLocation[], location: TieredLocation, endpoints: Endpoints): boolean {
  const place = tieredLocationPlace(location, endpoints);
  return known.some((candidate) => tieredLocationPlace(candidate, endpoints) === place);
}

/** The locations replicated metadata lists (none before the first tiered batch). */
export async function readTieredLocations(meta: { getMeta<T>(name: string): Promise<T | undefined> }): Promise<TieredLocation[]> {
  return (await meta.getMeta<TieredLocation[]>(TIERED_LOCATIONS_META)) ?? [];
}

/** Whether `location` is among `known` (it received tiered events). */
export function includesLocation(known: readonly TieredLocation[], location: TieredLocation): boolean {
  const key = tieredLocationKey(location);
  return known.some((candidate) => tieredLocationKey(candidate) === key);
}
