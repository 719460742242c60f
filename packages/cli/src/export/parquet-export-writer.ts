import { EXPORT_COLUMNS, toExportRow, type EventOutput, type ExportColumn, type ExportRow } from '@auditlake/model';
import { ByteWriter, ParquetWriter, type ColumnSource, type SchemaElement, type Writer } from 'hyparquet-writer';
import type { ByteSink, EventWriter } from './event-writer.js';

/** `created_by` in the footer, so a file found later says what wrote it. */
export const EXPORT_CREATED_BY = 'auditlake export (hyparquet-writer)';

function element(column: ExportColumn): SchemaElement {
  const base = { name: column.name, repetition_type: column.required ? 'REQUIRED' : 'OPTIONAL' } as const;
  switch (column.type) {
    case 'string':
      return { ...base, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
    case 'long':
      return { ...base, type: 'INT64' };
    case 'timestamptz':
      return { ...base, type: 'INT64', converted_type: 'TIMESTAMP_MICROS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' } };
  }
}

function columnData(rows: readonly ExportRow[]): ColumnSource[] {
  return EXPORT_COLUMNS.map((column): ColumnSource => {
    const name = column.name;
    if (name === 'ts' || name === 'ingest_ts') return { name, data: BigInt64Array.from(rows, (row) => BigInt(row[name])) };
    if (name === 'event_time') return { name, data: BigInt64Array.from(rows, (row) => row.event_time) };
    return { name, data: rows.map((row) => row[name]) };
  });
}

/**
 * Parquet with the tiered columns (names, types and order as the tier's files, without the
 * Iceberg field ids an export does not need), SNAPPY-compressed, one row group per page of the
 * export, written out as each page arrives: memory holds one page, not the whole history.
 */
export class ParquetExportWriter implements EventWriter {
  readonly #sink: ByteSink;
  readonly #bytes = new ByteWriter();
  readonly #parquet: ParquetWriter;
  #closed = false;

  constructor(sink: ByteSink) {
    this.#sink = sink;
    // Each row group is handed to the sink as soon as it is encoded (the writer awaits it).
    const writer: Writer = Object.assign(this.#bytes, { flush: () => this.#drain() });
    this.#parquet = new ParquetWriter({
      writer,
      schema: [{ name: 'table', num_children: EXPORT_COLUMNS.length }, ...EXPORT_COLUMNS.map(element)],
      codec: 'SNAPPY',
      statistics: true,
      createdBy: EXPORT_CREATED_BY,
    });
  }

  async write(events: readonly EventOutput[]): Promise<void> {
    if (events.length === 0) return;
    await this.#parquet.write({ columnData: columnData(events.map(toExportRow)), rowGroupSize: events.length });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#parquet.finish();
    await this.#drain();
    await this.#sink.close();
  }

  async #drain(): Promise<void> {
    if (this.#bytes.index === 0) return;
    const chunk = new Uint8Array(this.#bytes.buffer, 0, this.#bytes.index).slice();
    this.#bytes.index = 0;
    await this.#sink.write(chunk);
  }
}
