import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { Level } from 'level';

type Write = (...args: unknown[]) => Promise<unknown>;

/** abstract-level's implementation methods every write reaches (its documented contract for implementations). */
interface LevelWrites {
  _put: Write;
  _del: Write;
  _batch: Write;
  _clear: Write;
  _chainedBatch: () => { _write: Write };
}

/** The error every write meets once the store failed one (see latchWriteFaults). */
export function writeFaultRefusal(fault: Error): AuditError {
  return new AuditError(
    AuditErrorCode.STORE_WRITE_FAILED,
    `the local store failed a write (${fault.message}) and accepts none since: LevelDB may hold a partial record in its log, after which a later write would be lost when the node restarts. Free the space or repair the disk, then restart the node (its log is recovered up to the failed write)`,
    { cause: fault },
  );
}

/**
 * Makes the first failed write to `db` the last: every write after it is refused before it
 * reaches LevelDB (or, when it was already on its way, once it comes back), and `onFault` is
 * told once. LevelDB itself stops only after a failed sync; a failed append to its log (no
 * space left, a file-size limit) leaves a partial record there and LevelDB goes on appending
 * behind it, so later writes succeed, are acknowledged, and are dropped with the log's damaged
 * tail when the database next opens (measured: 1,000 events acknowledged after a failed append,
 * all gone after a restart). A restart recovers the log up to the failed write, which was never
 * acknowledged.
 *
 * Every write goes through abstract-level's `_put`, `_del`, `_batch`, `_clear` and a chained
 * batch's `_write`, which are wrapped here on this instance.
 */
export function latchWriteFaults(db: Level<string, string>, onFault: (fault: Error) => void): { fault(): Error | undefined } {
  let fault: Error | undefined;
  const writes = db as unknown as LevelWrites;
  const guard =
    (write: Write): Write =>
    async (...args) => {
      if (fault !== undefined) throw writeFaultRefusal(fault);
      let result: unknown;
      try {
        result = await write(...args);
      } catch (err) {
        if (fault === undefined) {
          fault = err instanceof Error ? err : new Error(String(err));
          onFault(fault);
        }
        throw err;
      }
      // A write already on its way into LevelDB when another failed (two batches queued at
      // once: outbox writes do not wait for the log's writer) may sit behind the partial record
      // and be dropped at the next open, so it is not reported as done either (review). LevelDB
      // runs queued writes one after another and their answers come back in that order, so a
      // fault before this write's end is known here.
      if (fault !== undefined) throw writeFaultRefusal(fault);
      return result;
    };
  for (const name of ['_put', '_del', '_batch', '_clear'] as const) writes[name] = guard(writes[name].bind(db));
  const chainedBatch = writes._chainedBatch.bind(db);
  writes._chainedBatch = () => {
    const batch = chainedBatch();
    batch._write = guard(batch._write.bind(batch));
    return batch;
  };
  return { fault: () => fault };
}
