import { isAuditError } from '@auditlake/model';
import { RECORD_FORMATS } from './formats/formats.js';
import { ImportProgress } from './import-progress.js';
import { parseImportOptions } from './import-options.js';
import { Importer } from './importer.js';
import { IngestClient } from './ingest-client.js';
import { inputFiles } from './input-files.js';
import { NodeClient, type NodeClientOptions } from './node-client.js';
import { ResumeFile } from './resume-file.js';

/** Exit status when some records were refused (malformed, or refused by the node). */
export const EXIT_SOME_REFUSED = 3;
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;

export interface CommandIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; readonly isTTY?: boolean };
}

/**
 * `auditlake import`: reads other systems' audit logs and sends them to a node's ingest API.
 * Ends with `imported N, duplicates D, refused R` on standard output.
 */
export async function importCommand(args: string[], env: NodeJS.ProcessEnv, io: CommandIo, clientOverrides: Partial<NodeClientOptions> = {}): Promise<number> {
  let options;
  let files;
  let resume;
  try {
    options = parseImportOptions(args, env);
    files = await inputFiles(options.paths);
    if (options.resumeFile !== undefined) resume = await ResumeFile.open(options.resumeFile, options.format);
  } catch (err) {
    if (!isAuditError(err)) throw err;
    io.stderr.write(`auditlake import: ${err.message}\n`);
    return EXIT_USAGE;
  }
  const progress = new ImportProgress({
    out: io.stderr,
    totalBytes: files.every((f) => f.kind === 'file') ? files.reduce((sum, f) => sum + (f.kind === 'file' ? f.sizeBytes : 0), 0) : undefined,
  });
  const node = new NodeClient({
    url: options.url,
    token: options.token,
    onRetry: (reason, delayMs) => progress.note(`auditlake import: ${node.shown} could not take the batch (${reason}); retrying in ${delayMs} ms`),
    ...clientOverrides,
  });
  const importer = new Importer({
    format: RECORD_FORMATS[options.format],
    files,
    ingest: new IngestClient(node),
    context: { timeZone: options.timeZone },
    progress,
    ...(resume ? { resume } : {}),
  });
  let summary;
  try {
    summary = await importer.run();
  } catch (err) {
    progress.finish();
    if (!isAuditError(err)) throw err;
    io.stderr.write(`auditlake import: ${err.message}${resume ? `\nprogress is kept in ${resume.path}; run the same command again to continue` : ''}\n`);
    return EXIT_FAILURE;
  }
  if (summary.skipped > 0) io.stderr.write(`auditlake import: skipped ${summary.skipped} lines or records that are not audit records\n`);
  io.stdout.write(`imported ${summary.imported}, duplicates ${summary.duplicates}, refused ${summary.refused}\n`);
  return summary.refused > 0 ? EXIT_SOME_REFUSED : 0;
}
