import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Writable } from 'node:stream';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { ByteSink } from './event-writer.js';

/** A sink that can also be dropped: a file's partial copy is removed. Both are idempotent. */
export interface ExportSink extends ByteSink {
  abort(): Promise<void>;
}

/**
 * A sink over a file (written to `<file>.partial` and renamed when closed, so a failed export
 * never leaves a file that looks complete) or over standard output. A file that cannot be
 * created, or a path that is a directory, is a BAD_REQUEST naming it; a rename that fails at
 * the end removes the partial copy and is an UNREACHABLE naming the path.
 */
export async function openSink(path: string | undefined, stdout: Writable): Promise<ExportSink> {
  if (path === undefined) return streamSink(stdout, async () => undefined, async () => undefined, { outlivesSink: true });
  // Checked before anything is written: the rename at the end would fail only after the whole
  // export, and leave `<path>.partial` behind.
  const existing = await stat(path).catch(() => undefined);
  if (existing?.isDirectory()) throw new AuditError(AuditErrorCode.BAD_REQUEST, `--out ${path}: is a directory; name a file to write the export to`);
  const partial = `${path}.partial`;
  // Made new (a stale `.partial` of an earlier run is removed first; O_EXCL does not follow a
  // link put in its place) and readable by its owner only: an audit export holds who did what.
  let stream;
  try {
    await rm(partial, { force: true });
    stream = createWriteStream(partial, { flags: 'wx', mode: EXPORT_FILE_MODE });
    await once(stream, 'open');
  } catch (err) {
    stream?.destroy();
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `--out ${path}: cannot write ${partial}: ${(err as Error).message}`, { cause: err });
  }
  const file = stream;
  return streamSink(
    file,
    async () => {
      file.end();
      await once(file, 'close');
      try {
        // On disk before it takes the name, and the name on disk after: a crash never leaves
        // a complete-looking file with missing bytes.
        await syncFile(partial);
        await rename(partial, path);
      } catch (err) {
        // Something took the name during the export (a directory made meanwhile): no file is
        // the export, so none of it may stay.
        await rm(partial, { force: true });
        throw new AuditError(AuditErrorCode.UNREACHABLE, `--out ${path}: cannot rename ${partial} to it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
      }
      await syncDirectory(dirname(path));
    },
    async () => {
      file.destroy();
      await rm(partial, { force: true });
    },
    { outlivesSink: false },
  );
}

/** The mode an export file is created with: its owner reads and writes it, nobody else. */
export const EXPORT_FILE_MODE = 0o600;

async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a rename in `dir` durable; a platform that cannot fsync a directory (Windows) skips it. */
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') {
      throw new AuditError(AuditErrorCode.UNREACHABLE, `the export's directory ${dir} could not be synced: ${code ?? (err as Error).message}`, { cause: err });
    }
  } finally {
    await handle?.close();
  }
}

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
