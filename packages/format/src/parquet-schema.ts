// The writer's own SchemaElement type: hyparquet-writer pins its own hyparquet version.
import type { SchemaElement } from 'hyparquet-writer';
import { AUDIT_COLUMNS, type AuditColumn } from './audit-columns.js';

/** Name of the Parquet root (message) element. Readers ignore it; Java writes `table`. */
export const PARQUET_ROOT_NAME = 'table';

/**
 * The Parquet schema element of one tiered column, per the Iceberg spec's Parquet type mapping
 * (Appendix A; docs/iceberg-layout.md §5):
 * - `string` → BYTE_ARRAY, logical STRING (converted UTF8);
 * - `long` → INT64, no annotation;
 * - `timestamptz` → INT64, logical TIMESTAMP(isAdjustedToUTC=true, MICROS). The legacy converted
 *   type TIMESTAMP_MICROS is set too: it implies UTC-adjusted, so it agrees, and older readers
 *   that only know converted types see a timestamp rather than a bare long.
 * Every element carries its Iceberg `field_id`; without ids DuckDB and Trino read NULLs and
 * Java falls back to positional ids.
 */
export function parquetColumnElement(column: AuditColumn): SchemaElement {
  const base = {
    name: column.name,
    field_id: column.fieldId,
    repetition_type: column.required ? 'REQUIRED' : 'OPTIONAL',
  } as const;
  switch (column.icebergType) {
    case 'string':
      return { ...base, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
    case 'long':
      return { ...base, type: 'INT64' };
    case 'timestamptz':
      return {
        ...base,
        type: 'INT64',
        converted_type: 'TIMESTAMP_MICROS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
      };
  }
}

/**
 * The full Parquet schema of a tiered data file: the root element followed by one element per
 * column of {@link AUDIT_COLUMNS}, in that order. A fresh array each call, because
 * hyparquet-writer keeps the array it is given inside the file metadata it builds.
 */
export function auditParquetSchema(): SchemaElement[] {
  return [
    { name: PARQUET_ROOT_NAME, num_children: AUDIT_COLUMNS.length },
    ...AUDIT_COLUMNS.map(parquetColumnElement),
  ];
}
