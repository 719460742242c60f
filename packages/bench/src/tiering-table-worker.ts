/**
 * Worker thread of the tiering bench's table build: generates and validates the viewer table's
 * events batch by batch, so the main thread can encode and commit one batch while the next is
 * being generated (generation and validation cost about as much CPU as encoding). The events
 * are exactly those a single thread would make: one generator, in order. At most
 * `aheadBatches` batches wait in the message queue (each is held in the main thread's heap).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { validateEvent, type StoredEvent } from '@auditlake/model';
import { createEventGenerator } from '@auditlake/testkit';

export interface TableWorkerData {
  seed: number;
  startTs: number;
  days: number;
  events: number;
  /** `nowMs` for validation (after the last event). */
  nowMs: number;
  /** Events per batch (one commit each). */
  batchEvents: number;
  aheadBatches: number;
}

/** One batch of events, or the end. */
export type TableWorkerMessage = { events: StoredEvent[] } | { done: true };

const DAY_MS = 24 * 60 * 60 * 1000;
const port = parentPort;
if (port === null) throw new Error('tiering-table-worker must run in a worker thread');
const data = workerData as TableWorkerData;
const generator = createEventGenerator({ seed: data.seed, startTs: data.startTs, spanMs: data.days * DAY_MS, count: data.events });
let seq = 0;
// Credits: the main thread sends one per batch it has taken, keeping the queue bounded.
let credits = data.aheadBatches;
let done = false;

function produce(): void {
  while (credits > 0 && seq < data.events) {
    const events: StoredEvent[] = [];
    for (const raw of generator.batch(Math.min(data.batchEvents, data.events - seq))) {
      const event = validateEvent(raw, 'event', { nowMs: data.nowMs });
      seq++;
      events.push({ ...event, ingestTs: event.timestamp + 500, seq, term: 1 });
    }
    port!.postMessage({ events } satisfies TableWorkerMessage);
    credits--;
  }
  if (seq === data.events && !done) {
    done = true;
    port!.postMessage({ done: true } satisfies TableWorkerMessage);
  }
}

port.on('message', () => {
  credits++;
  produce();
});
produce();
