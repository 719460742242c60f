import { createHash } from 'node:crypto';
import { open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { FormatName } from './formats/record-format.js';
import type { InputFile } from './input-files.js';
import { ResumeLock } from './resume-lock.js';
import { syncDirectory } from './sync-directory.js';

/** How far an import got in one file. */
export interface FileProgress {
  /** Every record that ends at or before this line has been stored, refused or reported. */
  line: number;
  /** The whole file was done, when it had this size and modification time. */
  complete: boolean;
  sizeBytes: number;
  mtimeMs: number;
  /** SHA-256 (hex) of the file's first `headBytes` bytes, to tell a file replaced under the same name. */
  headSha256?: string;
  headBytes?: number;
}

/** How much of a file's beginning its fingerprint covers. */
export const HEAD_BYTES_MAX = 64 * 1024;

/** Where to pick up a file: skip it, or start after `line`; `note` says why a recorded point is not used. */
export type ResumeStart = { skip: true } | { skip: false; line: number; note?: string };

interface ResumeState {
  version: 1;
  format: FormatName;
  files: Record<string, FileProgress>;
  /**
   * A run that stopped before it finished (a crash, a lost node): the records it refused among
   * those the files' lines cover. The next run starts after those lines and so would not meet
   * them again; it adds them to its summary, so the import's final report is true. Removed
   * when a run finishes. Absent in files written before it was kept: nothing to add.
   */
  unfinished?: { refused: number };
}

/** Least time between two writes of the resume file while a run goes on. */
export const WRITE_INTERVAL_MS = 1_000;

/**
 * `--resume-file`: per input file, the line up to which the import is done, written after
 * a batch the node acknowledged at most once every WRITE_INTERVAL_MS, and when the run ends
 * (to a temporary file, then renamed, so a killed import never leaves half a file). Written
 * after every batch and every file, the state of 200,000 files made the import rewrite ~50 MB
 * per file: quadratic (review). A kill loses at most that interval's progress: sent again, as
 * duplicates. Each write is synced before its rename and the rename after it, so a power loss
 * leaves the last state or the one before, never an empty file. One run at a time holds a
 * resume file (`F.lock`, resume-lock.ts) until `close()`. A re-run skips what is recorded. The
 * ids of imported records do not depend on it, so a batch acknowledged just before a kill and
 * sent again is only counted as duplicates, never stored twice.
 */
export class ResumeFile {
  readonly path: string;
  readonly #state: ResumeState;
  readonly #lock: ResumeLock;
  /** The fingerprint of each file this run read, taken once (its first bytes do not change while it is appended to). */
  readonly #heads = new Map<string, { bytes: number; sha256: string }>();

  readonly #now: () => number;
  /** When the state was last written; -Infinity before the first write. */
  #writtenAt = -Infinity;
  /** Recorded since the last write. */
  #dirty = false;

  private constructor(path: string, state: ResumeState, lock: ResumeLock, now: () => number) {
    this.path = path;
    this.#state = state;
    this.#lock = lock;
    this.#now = now;
  }

  /**
   * Opens `path`, or starts an empty record when it does not exist yet, and holds it until
   * `close()`: refused while another import holds it. `now`: the clock writes are spaced by.
   */
  static async open(path: string, format: FormatName, now: () => number = () => performance.now()): Promise<ResumeFile> {
    const lock = await ResumeLock.take(path);
    try {
      return new ResumeFile(path, await ResumeFile.#read(path, format), lock, now);
    } catch (err) {
      await lock.release();
      throw err;
    }
  }

  /** The state `path` records, or an empty one when it does not exist yet. */
  static async #read(path: string, format: FormatName): Promise<ResumeState> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        await ResumeFile.#checkWritable(path);
        return { version: 1, format, files: {} };
      }
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
    await ResumeFile.#checkWritable(path);
    if (resumed.format !== format) throw usage(`the resume file ${path} records an import of --format ${resumed.format}, not ${format}`);
    if (Array.isArray(resumed.files)) throw usage(`the resume file ${path} is not one this command wrote (its files are a list); remove it to start over`);
    // An entry read as it is would skip lines or files on the strength of values this command never writes.
    for (const [name, progress] of Object.entries(resumed.files)) {
      if (!isFileProgress(progress)) throw usage(`the resume file ${path} has an entry for ${name} that this command did not write (line ${JSON.stringify((progress as { line?: unknown } | null)?.line)}); remove the entry (or the resume file) to import that file from its first line`);
    }
    return resumed;
  }

  /**
   * Refuses, before anything is sent, a resume file that cannot be written where it is to be:
   * found only at the first record, after the first batch was sent, it ended the import with a
   * stack trace (review). Its temporary copy is written and removed.
   */
  static async #checkWritable(path: string): Promise<void> {
    const temporary = `${path}.tmp`;
    try {
      await writeFile(temporary, '');
      await unlink(temporary);
    } catch (err) {
      throw usage(`cannot write the resume file ${path} (its temporary copy ${temporary}): ${(err as Error).message}`);
    }
  }

  /**
   * Where to pick up `file`: skipped when it was completed and has not changed since (same size,
   * modification time and first bytes), else the line after which records are still to be sent
   * (0: from the start). A file whose first bytes are not the ones recorded is a different file
   * under the old name (a rotation): read from the start, and `note` says so.
   */
  async startFor(file: InputFile): Promise<ResumeStart> {
    if (file.kind !== 'file') return { skip: false, line: 0 };
    const progress = this.#state.files[file.path];
    if (progress === undefined) return { skip: false, line: 0 };
    // A resume file written before fingerprints were recorded cannot tell: read it all again (only duplicates).
    if (progress.headSha256 === undefined || progress.headBytes === undefined) {
      return { skip: false, line: 0, ...(progress.line > 0 ? { note: `${file.path}: the resume file has no fingerprint of it; importing it from the start` } : {}) };
    }
    // A file smaller than when it was read is a new file under the old name: read it all.
    // A file gone since it was listed (rotated away) reads as a new file: its reading then fails, and is reported.
    if (file.sizeBytes < progress.sizeBytes || (await headSha256(file.path, progress.headBytes).catch(() => undefined)) !== progress.headSha256) {
      return { skip: false, line: 0, note: `${file.path} is not the file the resume file recorded (its first bytes differ); importing it from the start` };
    }
    if (progress.complete && progress.sizeBytes === file.sizeBytes && progress.mtimeMs === file.mtimeMs) return { skip: true };
    return { skip: false, line: progress.line };
  }

  /** Records refused by an earlier run that did not finish, which this run will not read again. */
  get carriedRefusals(): number {
    const refused = this.#state.unfinished?.refused;
    return typeof refused === 'number' && Number.isSafeInteger(refused) && refused > 0 ? refused : 0;
  }

  /**
   * Records how far `file` is done, and `refused`: every record refused so far by this run and
   * the unfinished runs before it, among the records the recorded lines cover.
   */
  async record(file: InputFile, line: number, complete: boolean, refused: number): Promise<void> {
    if (file.kind !== 'file') return;
    let head = this.#heads.get(file.path);
    if (head === undefined) {
      const bytes = Math.min(file.sizeBytes, HEAD_BYTES_MAX);
      // A file removed since it was listed (a rotation) has no fingerprint to record: nothing of it
      // is recorded, and the next run reads whatever is under its name from the start. Thrown,
      // the error ended the whole import, the files after it unread (review).
      const sha256 = await headSha256(file.path, bytes).catch(() => undefined);
      if (sha256 === undefined) return;
      head = { bytes, sha256 };
      this.#heads.set(file.path, head);
    }
    this.#state.files[file.path] = { line, complete, sizeBytes: file.sizeBytes, mtimeMs: file.mtimeMs, headSha256: head.sha256, headBytes: head.bytes };
    this.#state.unfinished = { refused };
    this.#dirty = true;
    if (this.#now() - this.#writtenAt >= WRITE_INTERVAL_MS) await this.#write();
  }

  /** Writes what was recorded since the last write: when a run stops, whatever the reason. */
  async flush(): Promise<void> {
    if (this.#dirty) await this.#write();
  }

  /** The run got through every file: the next run reports only its own refusals. */
  async finish(): Promise<void> {
    if (this.#state.unfinished !== undefined) {
      delete this.#state.unfinished;
      this.#dirty = true;
    }
    await this.flush();
  }

  /** Lets another run use the resume file (its lock removed). Idempotent; writes nothing. */
  async close(): Promise<void> {
    await this.#lock.release();
  }

  async #write(): Promise<void> {
    this.#writtenAt = this.#now();
    this.#dirty = false;
    const temporary = `${this.path}.tmp`;
    try {
      const handle = await open(temporary, 'w');
      try {
        await handle.writeFile(JSON.stringify(this.#state, null, 1) + '\n');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, this.path);
      await syncDirectory(dirname(this.path), "the resume file's directory");
    } catch (err) {
      // A full disk, a directory removed: the import stops, saying so (the file as last written stays).
      throw new AuditError(AuditErrorCode.UNREACHABLE, `cannot write the resume file ${this.path}: ${(err as Error).message}; what it last recorded is kept`);
    }
  }
}

/** SHA-256 (hex) of the first `bytes` bytes of `path` (fewer when it is shorter). */
async function headSha256(path: string, bytes: number): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    let filled = 0;
    while (filled < bytes) {
      const { bytesRead } = await handle.read(buffer, filled, bytes - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return createHash('sha256').update(buffer.subarray(0, filled)).digest('hex');
  } finally {
    await handle.close();
  }
}

/** An entry as `record` writes it: a line count, a flag, a size and a time (the fingerprint is optional: older files lack it). */
function isFileProgress(value: unknown): value is FileProgress {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  const count = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  return count(p['line']) && typeof p['complete'] === 'boolean' && count(p['sizeBytes']) && typeof p['mtimeMs'] === 'number' && (p['headSha256'] === undefined || typeof p['headSha256'] === 'string') && (p['headBytes'] === undefined || count(p['headBytes']));
}

function usage(message: string): AuditError {
  return new AuditError(AuditErrorCode.BAD_REQUEST, message);
}
