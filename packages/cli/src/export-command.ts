import type { Writable } from 'node:stream';
import { AuditErrorCode, isAuditError, parseSearchParams } from '@auditlake/model';
import { ExportProgress } from './export/export-progress.js';
import { exportWriter } from './export/export-writers.js';
import { openSink } from './export/byte-sink.js';
import { searchPages } from './export/search-pages.js';
import { parseExportOptions, EXPORT_USAGE } from './export-options.js';
import { EXIT_FAILURE, EXIT_USAGE, type CommandIo } from './import-command.js';
import { NodeClient, type NodeClientOptions } from './node-client.js';

export interface ExportIo extends CommandIo {
  /** Where the export goes without `--out`. */
  stdout: CommandIo['stdout'] & Writable;
}

/**
 * `auditlake export`: every event matching the filters, paged through the search API with its
 * cursor, into one file of the chosen format. The file appears (renamed from a temporary
 * `FILE.<random>.partial` of this run's own) only when complete; on failure nothing is left
 * and the exit status is 1.
 */
export async function exportCommand(args: string[], env: NodeJS.ProcessEnv, io: ExportIo, clientOverrides: Partial<NodeClientOptions> = {}): Promise<number> {
  let options;
  let fromMs;
  let sink;
  try {
    options = parseExportOptions(args, env);
    // The node would refuse these too; checked here so a typo costs no request.
    fromMs = parseSearchParams(options.filters, Number.MAX_SAFE_INTEGER).fromMs;
  } catch (err) {
    if (!isAuditError(err)) throw err;
    io.stderr.write(`auditlake export: ${err.message}${err.message.includes('\nusage:') ? '' : `\n${EXPORT_USAGE}`}\n`);
    return EXIT_USAGE;
  }
  try {
    sink = await openSink(options.out, io.stdout);
  } catch (err) {
    if (!isAuditError(err)) throw err;
    // The path, not the command line, is wrong: one line saying which and why, no usage text.
    io.stderr.write(`auditlake export: ${err.message}\n`);
    return EXIT_USAGE;
  }
  const progress = new ExportProgress({ out: io.stderr, fromMs });
  const node = new NodeClient({
    url: options.url,
    token: options.token,
    onRetry: (reason, delayMs) => progress.note(`auditlake export: ${node.shown} did not answer (${reason}); retrying in ${delayMs} ms`),
    ...clientOverrides,
  });
  const writer = exportWriter(options.format, sink);
  let exported = 0;
  let staleNoted = false;
  try {
    for await (const page of searchPages(node, options.filters, options.pageSize)) {
      if (page.stale && !staleNoted) {
        staleNoted = true;
        progress.note(`auditlake export: ${node.shown} is not the leader and cannot reach one; its copy may lack the newest events`);
      }
      await writer.write(page.events);
      exported += page.events.length;
      progress.page(page.events.length, page.events.at(-1)?.timestamp, page.events[0]?.timestamp);
    }
    await writer.close();
  } catch (err) {
    progress.finish();
    await sink.abort();
    if (!isAuditError(err)) throw err;
    io.stderr.write(`auditlake export: ${err.message}${options.out === undefined ? '' : `\nnothing was written to ${options.out}`}\n`);
    return err.code === AuditErrorCode.BAD_REQUEST ? EXIT_USAGE : EXIT_FAILURE;
  }
  progress.finish();
  const summary = `exported ${exported} events${options.out === undefined ? '' : ` to ${options.out}`}\n`;
  // Without --out, standard output is the export itself.
  (options.out === undefined ? io.stderr : io.stdout).write(summary);
  return 0;
}
