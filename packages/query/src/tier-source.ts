import type { ByteSource } from '@auditlake/format';

/** One committed data file of a tier, with the event-time bounds its commit recorded. */
export interface TierFile {
  key: string;
  eventDate: string;
  rows: number;
  tsMin: number;
  tsMax: number;
}

/**
 * A place tiered history can be read from (a Parquet location, later an Iceberg table).
 * The reader sees only committed files, through ranged reads.
 */
export interface TierSource {
  /** Named in `tierNote` when it cannot be read, e.g. `s3://bucket/prefix`. */
  readonly name: string;
  listFiles(): Promise<TierFile[]>;
  open(file: TierFile): Promise<ByteSource>;
}
