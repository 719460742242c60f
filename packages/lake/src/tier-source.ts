import type { ByteSource, ParquetFooterCache, TextProbePool } from '@auditlake/format';

/** One committed data file of a tier, with the event-time bounds its commit recorded. */
export interface TierFile {
  key: string;
  eventDate: string;
  rows: number;
  tsMin: number;
  tsMax: number;
  /** Size of the file in bytes, when the commit recorded it (saves asking the store). */
  bytes?: number;
  /**
   * The UTF-8 bytes of the file's least and greatest `event_id`, where its metadata declares
   * them (an Iceberg manifest's bounds, possibly truncated): a lookup by id opens no file they
   * rule out, not even for its footer.
   */
  eventIdMin?: Uint8Array;
  eventIdMax?: Uint8Array;
}

/**
 * A place tiered history can be read from (a Parquet location or an Iceberg table): the
 * interface the merged reader (`@auditlake/query`) reads through. The reader sees only
 * committed files, through ranged reads.
 */
export interface TierSource {
  /** Named in `tierNote` when it cannot be read, e.g. `s3://bucket/prefix`. */
  readonly name: string;
  listFiles(): Promise<TierFile[]>;
  /**
   * Footers of this tier's files already read, by file key, kept between searches (the
   * source lives as long as the node). Without it every search reads each footer again.
   */
  readonly footers?: ParquetFooterCache;
  /** Worker threads for the free-text prefilter of this tier's files; without it, it runs inline. */
  readonly textProbes?: TextProbePool;
  open(file: TierFile): Promise<ByteSource>;
}
