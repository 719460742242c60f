import type { EventOutput } from '@auditlake/model';

/** One JSON event per line, as `GET /admin/audit` answers with `Accept: application/x-ndjson`. */
export function toNdjson(events: readonly EventOutput[]): string {
  return events.map((e) => JSON.stringify(e) + '\n').join('');
}

export const CSV_COLUMNS = ['eventId', 'timestamp', 'time', 'ingestTs', 'userId', 'source', 'action', 'decision', 'resource', 'tables', 'query', 'details'] as const;

/**
 * A cell as RFC 4180 wants it, and never a formula: audit text is written by whoever is
 * audited, and a spreadsheet would run `=HYPERLINK(…)` typed into a query. Such a cell gets a
 * leading apostrophe (OWASP's advice for CSV injection).
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** The events as CSV with a header; `tables` joined by `;`, `time` as ISO-8601 UTC. */
export function toCsv(events: readonly EventOutput[]): string {
  const rows = events.map((e) =>
    [e.eventId, String(e.timestamp), new Date(e.timestamp).toISOString(), String(e.ingestTs), e.userId, e.source, e.action, e.decision, e.resource, e.tables.join(';'), e.query, e.details].map(csvCell).join(','),
  );
  return [CSV_COLUMNS.join(','), ...rows].join('\r\n') + '\r\n';
}

/** Offers `text` as a file download (a blob URL: nothing leaves the browser). */
export function download(fileName: string, mimeType: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: mimeType }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
