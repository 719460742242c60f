import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
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
 * created is a BAD_REQUEST naming it.
 */
export async function openSink(path: string | undefined, stdout: Writable): Promise<ExportSink> {
  if (path === undefined) return streamSink(stdout, async () => undefined, async () => undefined);
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
      await rename(partial, path);
    },
    async () => {
      stream.destroy();
      await rm(partial, { force: true });
    },
  );
}

function streamSink(stream: Writable, finish: () => Promise<void>, abort: () => Promise<void>): ExportSink {
  let closed = false;
  let failure: Error | undefined;
  // Kept, not thrown from an event: the next write or close reports it.
  stream.on('error', (err) => (failure ??= err));
  const check = () => {
    if (failure) throw new AuditError(AuditErrorCode.UNREACHABLE, `the export could not be written: ${failure.message}`, { cause: failure });
  };
  return {
    async write(bytes) {
      check();
      if (!stream.write(bytes)) await Promise.race([once(stream, 'drain'), once(stream, 'error')]);
      check();
    },
    async close() {
      if (closed) return;
      closed = true;
      check();
      await finish();
    },
    async abort() {
      if (closed) return;
      closed = true;
      await abort();
    },
  };
}
