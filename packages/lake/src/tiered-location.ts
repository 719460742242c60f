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
