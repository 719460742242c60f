import { absoluteNowMs, sleep } from './clock.js';

/** One read of a node's applied seq: when it was sent, when the answer arrived, what it said. */
export interface SeqSample {
  sentAt: number;
  receivedAt: number;
  seq: number;
}

export interface SeqPoller {
  samples: SeqSample[];
  stop(): Promise<void>;
}

/**
 * Reads `read()` every `pollMs` (one read in flight) until stopped, recording each answer;
 * a failed read (a node that is down) is skipped.
 */
export function startSeqPoller(read: () => Promise<number>, pollMs: number): SeqPoller {
  const samples: SeqSample[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const sentAt = absoluteNowMs();
      let seq: number | undefined;
      try {
        seq = await read();
      } catch {
        seq = undefined;
      }
      const receivedAt = absoluteNowMs();
      if (seq !== undefined) samples.push({ sentAt, receivedAt, seq });
      await sleep(pollMs - (receivedAt - sentAt));
    }
  })();
  return {
    samples,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/**
 * The first time a node was seen holding `seq`: the arrival of the first read that showed it.
 * The node applied it somewhere between the start of the read before and this arrival, so
 * this overstates by at most one gap between reads. Samples must be in order (one poller).
 */
export function seenAt(samples: readonly SeqSample[], seq: number): number | undefined {
  let lo = 0;
  let hi = samples.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((samples[mid] as SeqSample).seq >= seq) hi = mid;
    else lo = mid + 1;
  }
  return samples[lo]?.receivedAt;
}

/**
 * True when a read that started at or after `at` still showed the node below `seq`: proof the
 * node had not applied `seq` at `at` (a node's applied seq only grows).
 */
export function provenMissingAt(samples: readonly SeqSample[], seq: number, at: number): boolean {
  return samples.some((s) => s.sentAt >= at && s.seq < seq);
}
