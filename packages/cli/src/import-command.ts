import { realpath } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';
import { RECORD_FORMATS } from './formats/formats.js';
import { ImportProgress } from './import-progress.js';
import { parseImportOptions, type ImportOptions } from './import-options.js';
import { Importer, type NodeRetention, type PastRetention } from './importer.js';
import { IngestClient } from './ingest-client.js';
import { inputFiles, type InputFile } from './input-files.js';
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
 * Ends with `imported N, duplicates D, refused R` on standard output (`, conflicts C` after D when
 * the node refused some as eventId conflicts; R counts them too).
 */
export async function importCommand(args: string[], env: NodeJS.ProcessEnv, io: CommandIo, clientOverrides: Partial<NodeClientOptions> = {}): Promise<number> {
  let options;
  let files;
  let resume;
  try {
    options = parseImportOptions(args, env);
    files = await inputFiles(options.paths);
    if (options.resumeFile !== undefined) {
      files = await withoutResumeFile(options.paths, files, options.resumeFile);
      resume = await ResumeFile.open(options.resumeFile, options.format);
    }
  } catch (err) {
    if (!isAuditError(err)) throw err;
    io.stderr.write(`auditlake import: ${err.message}\n`);
    return EXIT_USAGE;
  }
  try {
    return await importFiles(options, files, resume, env, io, clientOverrides);
  } finally {
    // On every way out, so the next run may use the resume file (a kill leaves the lock to be taken over).
    await resume?.close();
  }
}

/** The import itself, once the options are read and the resume file is held. */
async function importFiles(options: ImportOptions, files: InputFile[], resume: ResumeFile | undefined, env: NodeJS.ProcessEnv, io: CommandIo, clientOverrides: Partial<NodeClientOptions>): Promise<number> {
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
  const retention = await nodeRetention(options.url, env['AUDITLAKE_ADMIN_TOKEN'], clientOverrides);
  const importer = new Importer({
    format: RECORD_FORMATS[options.format],
    files,
    ingest: new IngestClient(node),
    context: { timeZone: options.timeZone },
    progress,
    ...(resume ? { resume } : {}),
    ...(retention ? { retention } : {}),
  });
  const warnPastRetention = () => {
    const past = importer.pastRetention;
    if (retention !== undefined && past !== undefined) io.stderr.write(pastRetentionWarning(retention, past));
  };
  let summary;
  try {
    summary = await importer.run();
  } catch (err) {
    progress.finish();
    // What was sent before the failure is pruned all the same.
    warnPastRetention();
    if (!isAuditError(err)) throw err;
    // A resume file that does not match a file: to be fixed before a run again, not re-run as it is.
    if (err.code === AuditErrorCode.BAD_REQUEST) {
      io.stderr.write(`auditlake import: ${err.message}\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(`auditlake import: ${err.message}${resume ? `\nprogress is kept in ${resume.path}; run the same command again to continue` : ''}\n`);
    return EXIT_FAILURE;
  }
  warnPastRetention();
  if (summary.skipped > 0) io.stderr.write(`auditlake import: skipped ${summary.skipped} lines or records that are not audit records\n`);
  if (summary.conflicts > 0) {
    io.stderr.write(
      `auditlake import: ${summary.conflicts} of the ${summary.refused} refused records ${summary.conflicts === 1 ? 'was an eventId conflict' : 'were eventId conflicts'}: the node holds other events under their eventIds, kept those and recorded the refusals (audit:EventIdConflict events); docs/import.md says why and what to do\n`,
    );
  }
  const conflicts = summary.conflicts > 0 ? `, conflicts ${summary.conflicts}` : '';
  io.stdout.write(`imported ${summary.imported}, duplicates ${summary.duplicates}${conflicts}, refused ${summary.refused}\n`);
  return summary.refused > 0 ? EXIT_SOME_REFUSED : 0;
}

/**
 * The input files without the resume file, its temporary copy (`F.tmp`) and its lock: kept inside the
 * directory being imported, the resume file was imported by the next run as records (review).
 * Named as a PATH itself, it is a usage error.
 */
async function withoutResumeFile(paths: readonly string[], files: InputFile[], resumeFile: string): Promise<InputFile[]> {
  const resumePath = resolve(resumeFile);
  if (paths.some((path) => resolve(path) === resumePath)) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `${resumeFile} is the resume file (--resume-file): name the files to import, not it`);
  }
  // Compared by real directory: the directory may be named through a link. Only files of the same name are looked at.
  const name = basename(resumePath);
  // The lock and its short-lived copies (resume-lock.ts) are the resume file's too.
  const isResumeFiles = (file: string) => file === name || file === `${name}.tmp` || file === `${name}.lock` || file.startsWith(`${name}.lock.`);
  const realDir = async (path: string) => realpath(dirname(path)).catch(() => dirname(path));
  const resumeDir = await realDir(resumePath);
  const kept: InputFile[] = [];
  for (const file of files) {
    if (file.kind === 'file' && isResumeFiles(basename(file.path)) && (await realDir(file.path)) === resumeDir) continue;
    kept.push(file);
  }
  return kept;
}

/**
 * The node's retention from GET /admin/audit/settings, read with the admin token of
 * `$AUDITLAKE_ADMIN_TOKEN` only: the settings are the admin role's, and a node records every
 * refused request as a DENY event, so asking with an ingest token would put a false denial
 * into the audit log at every import. One attempt; any failure means no warning, never a
 * failed import.
 */
async function nodeRetention(url: string, adminToken: string | undefined, clientOverrides: Partial<NodeClientOptions>): Promise<NodeRetention | undefined> {
  if (adminToken === undefined || adminToken === '') return undefined;
  try {
    // One attempt of each kind: a 429 waited out here stalled the import silently for minutes (review).
    const node = new NodeClient({ ...clientOverrides, url, token: adminToken, attemptsMax: 1, rateLimitedAttemptsMax: 1, onRetry: () => undefined });
    const response = await node.request('/admin/audit/settings', { headers: { accept: 'application/json' } });
    if (response.status !== 200) return undefined;
    const settings = (await response.json()) as Record<string, unknown>;
    const days = settings['audit.retention.days'];
    const tierMode = settings['audit.tier.mode'];
    if (typeof days !== 'number' || !Number.isFinite(days) || days <= 0) return undefined;
    return { days, tierMode: typeof tierMode === 'string' ? tierMode : 'none' };
  } catch {
    return undefined;
  }
}

/** The one warning about events the node's retention will delete: how many, the oldest, and what to do. */
export function pastRetentionWarning(retention: NodeRetention, past: PastRetention): string {
  const what = `${past.events} imported events are older than the node's retention (audit.retention.days ${retention.days}; the oldest ${new Date(past.oldestMs).toISOString()})`;
  const fate =
    retention.tierMode === 'none'
      ? 'the node deletes them at its next retention pass'
      : `the node keeps them only in its tier (audit.tier.mode ${retention.tierMode}), deleting them from its own disk once tiered`;
  return `auditlake import: warning: ${what}: ${fate}; to keep such events, raise audit.retention.days (POST /admin/audit/settings) before importing them\n`;
}
