/**
 * Runs tasks one at a time in the order they were queued. The endpoint's writes go through
 * one queue, so `If-None-Match: *` is decided and acted on with no other write in between,
 * and a delete never removes a directory a concurrent put has just made.
 */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task, task);
    // The queue goes on whether the task failed or not; the caller sees the failure.
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
