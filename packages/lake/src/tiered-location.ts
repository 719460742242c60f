import type { S3Connections } from './s3-connections.js';
import { parseS3Location } from './s3-location.js';

/** Replicated-metadata name of every location that ever received tiered events. */
export const TIERED_LOCATIONS_META = 'tieredLocations';

/** A place tiered events were written to, remembered so the reader never loses it. */
export type TieredLocation = (
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
    }
) & {
  /**
   * Where its connection sent requests when it was recorded (S3Connections.endpointOf), so the
   * place stays known once that connection is removed from the configuration; absent in what
   * older versions recorded until a commit fills it in (recordTieredLocation). Not part of the
   * description: the location the settings name now carries none.
   */
  endpoint?: string;
};

/** What keys a location as it was described (mode, path, connection id, table location), not its recorded endpoint. */
export function tieredLocationKey(location: TieredLocation): string {
  const { endpoint: _endpoint, ...described } = location;
  return JSON.stringify(described);
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
 * counts by the endpoint recorded with the location, or, recorded without one (an older
 * version), stays apart by its id.
 */
export function tieredLocationPlace(location: TieredLocation, endpoints: Endpoints): string {
  const s3 = parseS3Location(location.mode === 'iceberg' ? location.location : location.path);
  // The connection as configured now first: a connection pointed at a new address of the same
  // store (a renamed host) keeps its locations. The recorded endpoint once it is removed:
  // credentials rotated under a new id, the old one then removed, still name the same place.
  const endpoint = endpoints.endpointOf(location.connectionId) ?? location.endpoint ?? `connection:${location.connectionId}`;
  return JSON.stringify(s3 ? [location.mode, endpoint, s3.bucket, s3.prefix] : [location.mode, endpoint, location.path]);
}

/** Whether `location` is a place among `known` (it received tiered events). */
export function includesPlace(known: readonly TieredLocation[], location: TieredLocation, endpoints: Endpoints): boolean {
  const place = tieredLocationPlace(location, endpoints);
  return known.some((candidate) => tieredLocationPlace(candidate, endpoints) === place);
}

/**
 * `known` once `location` received tiered events: with it added (by description) and every
 * location whose connection is configured given the endpoint that connection has now (what
 * older versions recorded gets one; a connection given a new address moves its locations' too,
 * else a later removal of it compared them by the old address: review); undefined when that
 * changes nothing.
 */
export function recordTieredLocation(known: readonly TieredLocation[], location: TieredLocation, endpoints: Endpoints): TieredLocation[] | undefined {
  const withEndpoint = (candidate: TieredLocation): TieredLocation => {
    const endpoint = endpoints.endpointOf(candidate.connectionId);
    return endpoint === undefined || endpoint === candidate.endpoint ? candidate : { ...candidate, endpoint };
  };
  const recorded = includesLocation(known, location) ? known.map(withEndpoint) : [...known, location].map(withEndpoint);
  return recorded.length === known.length && recorded.every((candidate, i) => candidate === known[i]) ? undefined : recorded;
}

/**
 * The locations replicated metadata lists (none before the first tiered batch), each
 * description once: an older version leading for a while (after a failover in a cluster being
 * upgraded) compared descriptions with the endpoint in them and recorded a location again
 * without one, and every search then read it twice (review). The first listed is kept, with an
 * endpoint a later copy has when it has none.
 */
export async function readTieredLocations(meta: { getMeta<T>(name: string): Promise<T | undefined> }): Promise<TieredLocation[]> {
  const listed = (await meta.getMeta<TieredLocation[]>(TIERED_LOCATIONS_META)) ?? [];
  const byKey = new Map<string, TieredLocation>();
  for (const location of listed) {
    const key = tieredLocationKey(location);
    const first = byKey.get(key);
    if (first === undefined) byKey.set(key, location);
    else if (first.endpoint === undefined && location.endpoint !== undefined) byKey.set(key, { ...first, endpoint: location.endpoint });
  }
  return byKey.size === listed.length ? listed : [...byKey.values()];
}

/** Whether `location` is among `known` (it received tiered events). */
export function includesLocation(known: readonly TieredLocation[], location: TieredLocation): boolean {
  const key = tieredLocationKey(location);
  return known.some((candidate) => tieredLocationKey(candidate) === key);
}
