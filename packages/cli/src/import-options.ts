import { parseArgs } from 'node:util';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { FORMAT_NAMES, type FormatName } from './formats/record-format.js';
import { redactUrl } from './node-client.js';
import { parseTimeZone, UTC, type TimeZone } from './record-time.js';

export const IMPORT_USAGE = `usage: auditlake import --format <${FORMAT_NAMES.join('|')}> [--url URL] [--token T] [--resume-file F]
                        [--time-zone ZONE] PATH...
  PATH            a file, a directory (every file below it), or - for standard input; .gz is read as such
  --url           the node to send to (default: $AUDITLAKE_URL, else http://127.0.0.1:7070)
  --token         an ingest (or admin) token (default: $AUDITLAKE_INGEST_TOKEN)
  --resume-file   where progress per file is kept, so a stopped import continues where it stopped
  --time-zone     zone of times written without an offset (Gravitino's text format): UTC (default),
                  +08:00, or a name such as Asia/Shanghai
exit status: 0 all imported, 3 some records refused (reported on standard error), 2 usage error, 1 failure`;

export const DEFAULT_NODE_URL = 'http://127.0.0.1:7070';

export interface ImportOptions {
  format: FormatName;
  url: string;
  token: string;
  resumeFile?: string;
  timeZone: TimeZone;
  paths: string[];
}

function usageError(message: string): AuditError {
  return new AuditError(AuditErrorCode.BAD_REQUEST, `${message}\n${IMPORT_USAGE}`);
}

function isFormatName(value: string): value is FormatName {
  return (FORMAT_NAMES as readonly string[]).includes(value);
}

/** Parses `auditlake import` arguments; throws a coded error naming the bad input (exit 2). */
export function parseImportOptions(args: string[], env: NodeJS.ProcessEnv): ImportOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        format: { type: 'string' },
        url: { type: 'string' },
        token: { type: 'string' },
        'resume-file': { type: 'string' },
        'time-zone': { type: 'string', default: 'UTC' },
      },
    });
  } catch (err) {
    throw usageError((err as Error).message);
  }
  const v = parsed.values;
  if (v.format === undefined) throw usageError('--format is required');
  if (!isFormatName(v.format)) throw usageError(`--format must be one of ${FORMAT_NAMES.join(', ')}: ${v.format}`);
  if (parsed.positionals.length === 0) throw usageError('name at least one PATH (a file, a directory, or - for standard input)');
  const url = v.url ?? env['AUDITLAKE_URL'] ?? DEFAULT_NODE_URL;
  if (!/^https?:\/\/[^/]+/.test(url)) throw usageError(`--url must be an http(s) URL: ${redactUrl(url)}`);
  const token = v.token ?? env['AUDITLAKE_INGEST_TOKEN'];
  if (token === undefined || token === '') throw usageError('an ingest token is needed: --token T or AUDITLAKE_INGEST_TOKEN');
  const timeZone = v['time-zone'] === 'UTC' ? UTC : parseTimeZone(v['time-zone']);
  if (timeZone === undefined) throw usageError(`--time-zone must be UTC, an offset such as +08:00, or a zone name such as Asia/Shanghai: ${v['time-zone']}`);
  if (v['resume-file'] !== undefined && parsed.positionals.includes('-')) throw usageError('--resume-file cannot resume standard input (-): name files instead');
  const options: ImportOptions = { format: v.format, url, token, timeZone, paths: parsed.positionals };
  if (v['resume-file'] !== undefined) options.resumeFile = v['resume-file'];
  return options;
}
