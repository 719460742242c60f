import { EXPORT_COLUMNS, toExportRow, type EventOutput, type ExportColumn, type ExportRow } from '@auditlake/model';
import {
  Field,
  Int64,
  makeData,
  RecordBatch,
  RecordBatchStreamWriter,
  Schema,
  Struct,
  Table,
  tableToIPC,
  TimestampMicrosecond,
  Utf8,
  vectorFromArray,
  type Data,
  type DataType,
} from 'apache-arrow';

/** The media type of an Arrow IPC stream, which `Accept` asks for. */
export const ARROW_STREAM_MEDIA_TYPE = 'application/vnd.apache.arrow.stream';

function arrowType(column: ExportColumn): DataType {
  switch (column.type) {
    case 'string':
      return new Utf8();
    case 'long':
      return new Int64();
    case 'timestamptz':
      return new TimestampMicrosecond('UTC');
  }
}

/**
 * The Arrow schema of events: the tiered columns by name, type and order — strings as Utf8,
 * `ts` and `ingest_ts` as Int64 epoch ms, `event_time` as Timestamp(µs, UTC); a column the
 * tier requires is not nullable.
 */
export const ARROW_EVENT_SCHEMA = new Schema(EXPORT_COLUMNS.map((column) => new Field(column.name, arrowType(column), !column.required)));

function columnData(column: ExportColumn, rows: readonly ExportRow[]): Data {
  const name = column.name as keyof ExportRow;
  if (column.type === 'string') return vectorFromArray(rows.map((row) => row[name] as string), new Utf8()).data[0] as Data;
  const values = BigInt64Array.from(rows, (row) => (name === 'event_time' ? row.event_time : BigInt(row[name] as number)));
  return makeData({ type: arrowType(column) as Int64, length: rows.length, nullCount: 0, data: values }) as Data;
}

/** One record batch of events, in the order given. */
export function arrowRecordBatch(events: readonly EventOutput[]): RecordBatch {
  const rows = events.map(toExportRow);
  const children = EXPORT_COLUMNS.map((column) => columnData(column, rows));
  const data = makeData({ type: new Struct(ARROW_EVENT_SCHEMA.fields), length: rows.length, nullCount: 0, children });
  return new RecordBatch(ARROW_EVENT_SCHEMA, data);
}

/** A whole Arrow IPC stream of events: the schema, one record batch, the end marker. */
export function encodeArrowStream(events: readonly EventOutput[]): Uint8Array {
  return tableToIPC(new Table([arrowRecordBatch(events)]), 'stream');
}

/**
 * An Arrow IPC stream written a record batch at a time (an export's pages), read as it grows
 * through the async iterator. `end()` writes the end marker; a stream with no events still
 * carries the schema (one empty batch).
 */
export class ArrowEventStream implements AsyncIterable<Uint8Array> {
  readonly #writer = new RecordBatchStreamWriter();
  #batches = 0;

  write(events: readonly EventOutput[]): void {
    if (events.length === 0) return;
    this.#writer.write(arrowRecordBatch(events));
    this.#batches++;
  }

  end(): void {
    if (this.#batches === 0) this.#writer.write(arrowRecordBatch([]));
    this.#writer.close();
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.#writer[Symbol.asyncIterator]();
  }
}
