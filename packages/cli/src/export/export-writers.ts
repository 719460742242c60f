import type { ExportFormat } from '../export-options.js';
import { ArrowExportWriter } from './arrow-export-writer.js';
import { CsvWriter } from './csv-writer.js';
import type { ByteSink, EventWriter } from './event-writer.js';
import { NdjsonWriter } from './ndjson-writer.js';
import { toOcsf } from './ocsf-event.js';
import { ParquetExportWriter } from './parquet-export-writer.js';

/** The writer of an export format over a sink. */
export function exportWriter(format: ExportFormat, sink: ByteSink): EventWriter {
  switch (format) {
    case 'ndjson':
      return new NdjsonWriter(sink);
    case 'ocsf':
      return new NdjsonWriter(sink, toOcsf);
    case 'csv':
      return new CsvWriter(sink);
    case 'arrow':
      return new ArrowExportWriter(sink);
    case 'parquet':
      return new ParquetExportWriter(sink);
  }
}
