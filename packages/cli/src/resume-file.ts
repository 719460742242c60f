import { readFile, rename, writeFile } from 'node:fs/promises';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { FormatName } from './formats/record-format.js';
import type { InputFile } from './input-files.js';

/** How far an import got in one file. */
export interface FileProgress {
  /** Every record that ends at or before this line has been stored, refused or reported. */
  line: number;
  /** The whole file was done, when it had this size and modification time. */
  complete: boolean;
  sizeBytes: number;
  mtimeMs: number;
}

interface ResumeState {
  version: 1;
  format: FormatName;
  files: Record<string, FileProgress>;
}

/**
 * `--resume-file`: per input file, the line up to which the import is done, written after
 * every batch the node acknowledged (to a temporary file, then renamed, so a killed import
 * never leaves half a file). A re-run skips what is recorded. The ids of imported records do
 * not depend on it, so a batch acknowledged just before a kill and sent again is only counted
 * as duplicates, never stored twice.
 */
export class ResumeFile {
  readonly path: string;
  readonly #state: ResumeState;

  private constructor(path: string, state: ResumeState) {
    this.path = path;
    this.#state = state;
  }

  /** Opens `path`, or starts an empty record when it does not exist yet. */
  static async open(path: string, format: FormatName): Promise<ResumeFile> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new ResumeFile(path, { version: 1, format, files: {} });
      throw usage(`cannot read the resume file ${path}: ${(err as Error).message}`);
    }
    let state: unknown;
    try {
      state = JSON.parse(text);
    } catch {
      throw usage(`the resume file ${path} is not one this command wrote (not JSON); remove it to start over`);
    }
    if (typeof state !== 'object' || state === null || (state as ResumeState).version !== 1 || typeof (state as ResumeState).files !== 'object') {
      throw usage(`the resume file ${path} is not one this command wrote; remove it to start over`);
    }
    const resumed = state as ResumeState;
    if (resumed.format !== format) throw usage(`the resume file ${path} records an import of --format ${resumed.format}, not ${format}`);
    return new ResumeFile(path, resumed);
  }

  /**
   * Where to pick up `file`: 'skip' when it was completed and has not changed since, else the
   * line after which records are still to be sent (0: from the start).
   */
  startFor(file: InputFile): 'skip' | number {
    if (file.kind !== 'file') return 0;
    const progress = this.#state.files[file.path];
    if (progress === undefined) return 0;
    if (progress.complete && progress.sizeBytes === file.sizeBytes && progress.mtimeMs === file.mtimeMs) return 'skip';
    // A file smaller than when it was read is a new file under the old name: read it all.
    return file.sizeBytes < progress.sizeBytes ? 0 : progress.line;
  }

  async record(file: InputFile, line: number, complete: boolean): Promise<void> {
    if (file.kind !== 'file') return;
    this.#state.files[file.path] = { line, complete, sizeBytes: file.sizeBytes, mtimeMs: file.mtimeMs };
    const temporary = `${this.path}.tmp`;
    await writeFile(temporary, JSON.stringify(this.#state, null, 1) + '\n');
    await rename(temporary, this.path);
  }
}

function usage(message: string): AuditError {
  return new AuditError(AuditErrorCode.BAD_REQUEST, message);
}
