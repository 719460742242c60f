import type { EventOutput } from '@auditlake/model';

/** One JSON event per line, as `GET /admin/audit` answers with `Accept: application/x-ndjson`. */
export function toNdjson(events: readonly EventOutput[]): string {
  return events.map((e) => JSON.stringify(e) + '\n').join('');
}

export const CSV_COLUMNS = ['eventId', 'timestamp', 'time', 'ingestTs', 'userId', 'source', 'action', 'decision', 'resource', 'tables', 'query', 'details'] as const;

/**
 * A spreadsheet reads a cell as a formula when it starts with one of these, also after leading
 * whitespace (Excel trims it); the full-width forms (U+FF1D ＝, U+FF0B ＋, U+FF0D －, U+FF20 ＠)
 * too, which spreadsheets used with East Asian input methods convert to their ASCII forms.
 */
const FORMULA_START = /^(?:[\t\r]|\s*[=+\-@\uff1d\uff0b\uff0d\uff20])/;
/** Separators (`,`, and `;` where a locale lists with it), quotes, line breaks and tabs: the cell is quoted. */
const NEEDS_QUOTES = /[",;\r\n\t]/;

/**
 * A cell as RFC 4180 wants it, and never a formula: audit text is written by whoever is
 * audited, and a spreadsheet would run `=HYPERLINK(…)` typed into a query. Following OWASP's
 * advice for CSV injection, a cell whose first non-whitespace character is `=` `+` `-` `@` (or
 * their full-width forms), or
 * that starts with a tab or CR, gets a leading apostrophe; a cell holding `,` `;` `"` CR LF or a
 * tab is quoted (quotes doubled), so Excel in a `;`-separated locale does not split it into
 * cells of which one starts a formula. (The CLI's `auditlake export --format csv` is exact,
 * for tools, and does neither: docs/export.md.)
 */
export function csvCell(value: string): string {
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
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
