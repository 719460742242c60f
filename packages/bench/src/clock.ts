/**
 * Milliseconds since the epoch with performance.now()'s resolution. Unlike performance.now()
 * alone it is comparable across worker threads (each has its own timeOrigin), so a client in
 * a worker and a poller in the main thread can put their events on one time line.
 */
export function absoluteNowMs(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
