/** Where tiering stopped: the (ingestTs, seq) of the last tiered event. */
export interface Watermark {
  ingestTs: number;
  seq: number;
}

export const ZERO_WATERMARK: Watermark = { ingestTs: 0, seq: 0 };

/** The later of two watermarks (by seq: the log's one order). */
export function laterWatermark(a: Watermark, b: Watermark): Watermark {
  return b.seq > a.seq ? b : a;
}

/** Replicated-metadata name of the watermark. */
export const WATERMARK_META = 'tierWatermark';
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
