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

/** What keys a location: two descriptions of the same location give the same key. */
export function tieredLocationKey(location: TieredLocation): string {
  return JSON.stringify(location);
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
