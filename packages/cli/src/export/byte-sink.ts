import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
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
  const stream = createWriteStream(partial);
  try {
    await once(stream, 'open');
  } catch (err) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `--out ${path}: cannot write ${partial}: ${(err as Error).message}`, { cause: err });
  }
  return streamSink(
    stream,
    async () => {
      stream.end();
      await once(stream, 'finish');
      try {
        await rename(partial, path);
      } catch (err) {
        // Something took the name during the export (a directory made meanwhile): no file is
        // the export, so none of it may stay.
        await rm(partial, { force: true });
        throw new AuditError(AuditErrorCode.UNREACHABLE, `--out ${path}: cannot rename ${partial} to it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
      }
    },
    async () => {
      stream.destroy();
      await rm(partial, { force: true });
    },
    { outlivesSink: false },
  );
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
