import { parseArgs } from 'node:util';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { DEFAULT_NODE_URL } from './import-options.js';
import { redactUrl } from './node-client.js';

export const EXPORT_FORMATS = ['ndjson', 'csv', 'arrow', 'parquet', 'ocsf'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The search filters `auditlake export` passes on, by the API's parameter names. */
export const EXPORT_FILTERS = ['user', 'engine', 'table', 'action', 'decision', 'q', 'from', 'to'] as const;

export const EXPORT_USAGE = `usage: auditlake export --format <${EXPORT_FORMATS.join('|')}> [--out FILE] [--url URL] [--token T]
                        [--user U] [--engine E] [--table T] [--action read|write|all]
                        [--decision ALLOW|DENY|none] [--q TEXT] [--from TIME] [--to TIME] [--page-size N]
  every event matching the filters (the search API's, same meaning; TIME is epoch ms or ISO 8601;
  both included, a bare date --to 2026-11-30 is the whole of that UTC day),
  newest first, paged through with the cursor into one file
  --out           the file to write (default: standard output); written as FILE.<random>.partial (mode 0600), synced,
                  renamed when complete (an existing regular file is replaced; anything else is refused)
  --url           the node (default: $AUDITLAKE_URL, else http://127.0.0.1:7070)
  --token         an admin token (default: $AUDITLAKE_ADMIN_TOKEN)
  --page-size     events per request (default 1000; at most the node's auditlake.audit.viewer.max.page)
exit status: 0 written, 2 usage error, 1 failure (the node refused or could not be reached; no file is left)`;

export const PAGE_SIZE_DEFAULT = 1000;

export interface ExportOptions {
  format: ExportFormat;
  out?: string;
  url: string;
  token: string;
  /** Search parameters, as the API takes them. */
  filters: Record<string, string>;
  pageSize: number;
}

function usageError(message: string): AuditError {
  return new AuditError(AuditErrorCode.BAD_REQUEST, `${message}\n${EXPORT_USAGE}`);
}

function isExportFormat(value: string): value is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(value);
}

/** Parses `auditlake export` arguments; throws a coded error naming the bad input (exit 2). */
export function parseExportOptions(args: string[], env: NodeJS.ProcessEnv): ExportOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        format: { type: 'string' },
        out: { type: 'string' },
        url: { type: 'string' },
        token: { type: 'string' },
        'page-size': { type: 'string' },
        ...Object.fromEntries(EXPORT_FILTERS.map((name) => [name, { type: 'string' as const }])),
      },
    });
  } catch (err) {
    throw usageError((err as Error).message);
  }
  const v = parsed.values as Record<string, string | undefined>;
  const format = v['format'];
  if (format === undefined) throw usageError('--format is required');
  if (!isExportFormat(format)) throw usageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}: ${format}`);
  const url = v['url'] ?? env['AUDITLAKE_URL'] ?? DEFAULT_NODE_URL;
  if (!/^https?:\/\/[^/]+/.test(url)) throw usageError(`--url must be an http(s) URL: ${redactUrl(url)}`);
  const token = v['token'] ?? env['AUDITLAKE_ADMIN_TOKEN'];
  if (token === undefined || token === '') throw usageError('an admin token is needed: --token T or AUDITLAKE_ADMIN_TOKEN');
  const pageSizeText = v['page-size'] ?? String(PAGE_SIZE_DEFAULT);
  const pageSize = Number(pageSizeText);
  if (!/^\d+$/.test(pageSizeText) || pageSize < 1) throw usageError(`--page-size must be a positive integer: ${pageSizeText}`);
  const filters: Record<string, string> = {};
  for (const name of EXPORT_FILTERS) {
    const value = v[name];
    if (value !== undefined) filters[name] = value;
  }
  const options: ExportOptions = { format, url, token, filters, pageSize };
  if (v['out'] !== undefined) options.out = v['out'];
  return options;
}
