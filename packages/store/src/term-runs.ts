import { encodeUint, decodeUint, PREFIX } from './event-keys.js';

/**
 * Where a run of log entries of one term starts in this store's log. `received` says whether
 * the run's entries came from another node (replicated or caught up from a peer) or were
 * ordered here; a new run starts wherever the term or that origin changes.
 */
export interface TermRun {
  firstSeq: number;
  term: number;
  received: boolean;
}

/** A term boundary as nodes exchange them: the term of the entries from `firstSeq` on. */
export interface TermStart {
  term: number;
  firstSeq: number;
}

export function termRunKey(firstSeq: number): string {
  return PREFIX.termRun + encodeUint(firstSeq);
}

export function parseTermRun(key: string, value: string): TermRun {
  const { term, received } = JSON.parse(value) as { term: number; received: boolean };
  return { firstSeq: decodeUint(key.slice(PREFIX.termRun.length)), term, received };
}

export function termRunValue(run: TermRun): string {
  return JSON.stringify({ term: run.term, received: run.received });
}

/**
 * The term-boundary index of one store's own log, in memory (its copy on disk is written in
 * the same LevelDB batch as the entries that change it). It answers "which term holds seq s"
 * for every seq up to the log's end — also for entries retention has deleted, whose runs are
 * kept — in O(log runs), and gives the boundaries peers compare to find where two logs
 * agree in O(runs) rather than entry by entry.
 */
export class TermRuns {
  #runs: TermRun[];

  constructor(runs: readonly TermRun[]) {
    this.#runs = [...runs].sort((a, b) => a.firstSeq - b.firstSeq);
  }

  get all(): readonly TermRun[] {
    return this.#runs;
  }

  /** The run holding `seq`, or undefined before the first run (or for seq 0). */
  runAt(seq: number): TermRun | undefined {
    let low = 0;
    let high = this.#runs.length - 1;
    let found: TermRun | undefined;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const run = this.#runs[mid] as TermRun;
      if (run.firstSeq <= seq) {
        found = run;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    return found;
  }

  /** The term of the entry at `seq` (0 for seq 0 or before any run); the caller keeps seq within the log. */
  termAt(seq: number): number {
    return this.runAt(seq)?.term ?? 0;
  }

  /** Term boundaries as exchanged with peers: origin dropped, runs of one term merged. */
  starts(afterSeq = 0): TermStart[] {
    const starts: TermStart[] = [];
    for (const run of this.#runs) {
      if (starts.length > 0 && (starts[starts.length - 1] as TermStart).term === run.term) continue;
      starts.push({ term: run.term, firstSeq: run.firstSeq });
    }
    return starts.filter((s) => s.firstSeq > afterSeq);
  }

  add(run: TermRun): void {
    this.#runs = this.#runs.filter((r) => r.firstSeq < run.firstSeq);
    this.#runs.push(run);
  }

  /** Drops the runs that start after `seq` (the log was cut there). */
  cutAfter(seq: number): TermRun[] {
    const dropped = this.#runs.filter((r) => r.firstSeq > seq);
    this.#runs = this.#runs.filter((r) => r.firstSeq <= seq);
    return dropped;
  }
}
