/**
 * What one column of a tiered data file holds, summed up where the file is decoded (a
 * verifier's worker thread), so what the file's commit declares of the column (an Iceberg
 * manifest entry's counts and bounds) can be checked against it without decoding it again.
 */
export interface ColumnValueSummary {
  /** The column's Iceberg field id. */
  fieldId: number;
  /** Values in the column, nulls included: one per row (a column the file lacks reads as null in each). */
  values: number;
  nulls: number;
  /**
   * The least and greatest non-null value, in the order Iceberg bounds use: INT64 columns as
   * bigint, strings as text in code point order. Absent when every value is null.
   */
  min?: bigint | string;
  max?: bigint | string;
}
