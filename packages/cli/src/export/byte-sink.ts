import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { lstat, open, readlink, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Writable } from 'node:stream';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { syncDirectory } from '../sync-directory.js';
import type { ByteSink } from './event-writer.js';

/** A sink that can also be dropped: a file's partial copy is removed. Both are idempotent. */
export interface ExportSink extends ByteSink {
  abort(): Promise<void>;
}

/**
 * A sink over a file (written to a temporary file of its own next to it and renamed when
 * closed, so a failed export never leaves a file that looks complete) or over standard output.
 * An `--out` that cannot be created, or that exists and is not a regular file, is a BAD_REQUEST
 * naming it; a rename that fails at the end removes the temporary file and is an UNREACHABLE
 * naming the path.
 */
export async function openSink(path: string | undefined, stdout: Writable): Promise<ExportSink> {
  if (path === undefined) return streamSink(stdout, async () => undefined, async () => undefined, { outlivesSink: true });
  // Checked before anything is written: the rename at the end would fail only after the whole
  // export (a directory), or replace what is there with a regular file: a device, a FIFO or a
  // symbolic link (`--out /dev/null` run as root destroyed the device node; review).
  await refuseNonFile(path);
  // A name only this run uses, created exclusively ('wx': no file or link put in its place is
  // followed or reused) in the same directory, so the rename is atomic. With one shared
  // `FILE.partial`, a second export to FILE removed and recreated it while the first was
  // writing, and the first then renamed the other's bytes to FILE and reported its own count
  // (review). Nobody else's file is removed: concurrent exports each rename a whole file, the
  // last one wins.
  const partial = `${path}.${randomBytes(6).toString('hex')}.partial`;
  let handle: FileHandle | undefined;
  try {
    handle = await open(partial, 'wx', EXPORT_FILE_MODE);
  } catch (err) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `--out ${path}: cannot write ${partial}: ${(err as Error).message}`, { cause: err });
  }
  const file = handle;
  // The handle outlives the stream (autoClose off), so the bytes synced are the ones this
  // stream wrote. The stream holds a reference on it until destroyed: close() waits for that.
  const stream = file.createWriteStream({ autoClose: false });
  let closed = false;
  const closeFile = async () => {
    if (closed) return;
    closed = true;
    if (!stream.closed) {
      stream.destroy();
      await once(stream, 'close').catch(() => undefined);
    }
    await file.close();
  };
  return streamSink(
    stream,
    async () => {
      stream.end();
      await once(stream, 'finish');
      try {
        // On disk before it takes the name, and the name on disk after: a crash never leaves
        // a complete-looking file with missing bytes.
        await file.sync();
        await closeFile();
        await rename(partial, path);
      } catch (err) {
        // Something took the name during the export (a directory made meanwhile): no file is
        // the export, so none of it may stay.
        await closeFile().catch(() => undefined);
        await rm(partial, { force: true });
        throw new AuditError(AuditErrorCode.UNREACHABLE, `--out ${path}: cannot rename ${partial} to it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
      }
      await syncDirectory(dirname(path), "the export's directory");
    },
    async () => {
      await closeFile().catch(() => undefined);
      await rm(partial, { force: true });
    },
    { outlivesSink: false },
  );
}

/**
 * Refuses an `--out` that exists and is not a regular file, naming what it is. Not followed:
 * a symbolic link is refused too, naming where it points (the rename would replace the link,
 * not write where it points). A regular file is replaced when the export completes.
 */
async function refuseNonFile(path: string): Promise<void> {
  const existing = await lstat(path).catch(() => undefined);
  if (existing === undefined || existing.isFile()) return;
  if (existing.isDirectory()) throw new AuditError(AuditErrorCode.BAD_REQUEST, `--out ${path}: is a directory; name a file to write the export to`);
  if (existing.isSymbolicLink()) {
    const target = await readlink(path).catch(() => '?');
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `--out ${path}: is a symbolic link (to ${target}), which the export would replace with a file; name the file itself, or leave out --out and redirect standard output`);
  }
  const kind = existing.isCharacterDevice() ? 'a character device' : existing.isBlockDevice() ? 'a block device' : existing.isFIFO() ? 'a FIFO' : existing.isSocket() ? 'a socket' : 'not a regular file';
  throw new AuditError(AuditErrorCode.BAD_REQUEST, `--out ${path}: is ${kind}, which the export would replace with a file; to write to it, leave out --out and redirect standard output`);
}

/** The mode an export file is created with: its owner reads and writes it, nobody else. */
export const EXPORT_FILE_MODE = 0o600;

function streamSink(stream: Writable, finish: () => Promise<void>, abort: () => Promise<void>, options: { outlivesSink: boolean }): ExportSink {
  let closed = false;
  let failure: Error | undefined;
  // Kept, not thrown from an event: the next write or close reports it.
  const onError = (err: Error) => (failure ??= err);
  stream.on('error', onError);
  // Standard output lives on after the export (and through several in one process): the
  // listener goes with the sink. A file stream dies with the sink, and keeps it so that an
  // error after destroy() is not an uncaught 'error' event.
  const release = () => {
    if (options.outlivesSink) stream.off('error', onError);
  };
  const check = () => {
    if (failure) throw new AuditError(AuditErrorCode.UNREACHABLE, `the export could not be written: ${failure.message}`, { cause: failure });
  };
  return {
    async write(bytes) {
      check();
      if (!stream.write(bytes)) {
        // once() takes its own 'error' listener off when 'drain' comes (and rejects on an
        // error, which onError has kept for check()).
        await once(stream, 'drain').catch(() => undefined);
      }
      check();
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        check();
        await finish();
      } catch (err) {
        // A sink that cannot be finished is dropped here: after close() the caller's abort() is a no-op.
        await abort().catch(() => undefined);
        throw err;
      } finally {
        release();
      }
    },
    async abort() {
      if (closed) return;
      closed = true;
      release();
      await abort();
    },
  };
}
