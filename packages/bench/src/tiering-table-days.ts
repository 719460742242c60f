import { Worker } from 'node:worker_threads';
import type { StoredEvent } from '@auditlake/model';
import type { TableWorkerData, TableWorkerMessage } from './tiering-table-worker.js';

/**
 * The viewer table's events in batches of `batchEvents`, generated in a worker thread
 * (tiering-table-worker.ts) ahead of the caller. The worker is terminated when the iteration
 * ends, also early (a failed commit, an interrupted bench).
 */
export async function* generatedBatches(data: TableWorkerData): AsyncGenerator<StoredEvent[]> {
  const worker = new Worker(new URL('./tiering-table-worker.js', import.meta.url), { workerData: data });
  const queue: TableWorkerMessage[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  worker.on('message', (message: TableWorkerMessage) => {
    queue.push(message);
    wake?.();
  });
  worker.on('error', (err) => {
    failure = err;
    wake?.();
  });
  worker.on('exit', (code) => {
    failure ??= new Error(`table worker exited (code ${code}) before the last batch`);
    wake?.();
  });
  try {
    for (;;) {
      const message = queue.shift();
      if (message === undefined) {
        if (failure) throw failure;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      if ('done' in message) return;
      worker.postMessage('next');
      yield message.events;
    }
  } finally {
    await worker.terminate();
  }
}
