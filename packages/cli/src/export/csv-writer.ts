import { EXPORT_COLUMNS, toExportRow, type EventOutput } from '@auditlake/model';
import type { ByteSink, EventWriter } from './event-writer.js';

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote, a line break or edge spaces. */
export function csvField(value: string): string {
  return /[",\r\n]|^\s|\s$/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/**
 * CSV with a header of the export columns; `event_time` as ISO 8601 UTC (ms), `tables`
 * comma-joined inside one field, `\r\n` line ends as RFC 4180 asks.
 */
export class CsvWriter implements EventWriter {
  readonly #sink: ByteSink;
  #headerWritten = false;

  constructor(sink: ByteSink) {
    this.#sink = sink;
  }

  async write(events: readonly EventOutput[]): Promise<void> {
    const lines: string[] = [];
    if (!this.#headerWritten) {
      lines.push(EXPORT_COLUMNS.map((c) => c.name).join(','));
      this.#headerWritten = true;
    }
    for (const event of events) {
      const row = toExportRow(event);
      lines.push(
        EXPORT_COLUMNS.map((c) => {
          const value = row[c.name];
          if (c.name === 'event_time') return new Date(event.timestamp).toISOString();
          return csvField(String(value));
        }).join(','),
      );
    }
    if (lines.length > 0) await this.#sink.write(lines.join('\r\n') + '\r\n');
  }

  async close(): Promise<void> {
    // An empty export still has its header.
    if (!this.#headerWritten) await this.write([]);
    await this.#sink.close();
  }
}
