/**
 * Worker thread of the tiering bench's table build: generates and validates the viewer table's
 * events day by day, so the main thread can encode and commit one day while the next is being
 * generated (generation and validation cost about as much CPU as encoding; on one thread the
 * 10M-event table took twice as long). The events are exactly those a single thread would
 * make: one generator, in order. At most `aheadDays` days wait in the message queue.
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
  aheadDays: number;
}

/** One day's events, or the end. */
export type TableWorkerMessage = { day: number; events: StoredEvent[] } | { done: true };

const DAY_MS = 24 * 60 * 60 * 1000;
const port = parentPort;
if (port === null) throw new Error('tiering-table-worker must run in a worker thread');
const data = workerData as TableWorkerData;
const generator = createEventGenerator({ seed: data.seed, startTs: data.startTs, spanMs: data.days * DAY_MS, count: data.events });
let seq = 0;
let nextDay = 0;
// Credits: the main thread sends one per day it has taken, keeping the queue bounded.
let credits = data.aheadDays;

function produce(): void {
  while (credits > 0 && nextDay < data.days) {
    const end = Math.round(((nextDay + 1) * data.events) / data.days);
    const events: StoredEvent[] = [];
    for (const raw of generator.batch(end - seq)) {
      const event = validateEvent(raw, 'event', { nowMs: data.nowMs });
      seq++;
      events.push({ ...event, ingestTs: event.timestamp + 500, seq, term: 1 });
    }
    port!.postMessage({ day: nextDay, events } satisfies TableWorkerMessage);
    nextDay++;
    credits--;
  }
  if (nextDay === data.days) port!.postMessage({ done: true } satisfies TableWorkerMessage);
}

port.on('message', () => {
  credits++;
  produce();
});
produce();
