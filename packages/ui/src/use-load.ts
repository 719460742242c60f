import { useEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  /** The value loaded for the current deps; undefined while they load and after a failed load. */
  value: T | undefined;
  /** The last load's failure message, '' after a success. */
  error: string;
  reload: () => void;
  set: (v: T) => void;
}

/** What the last load left, and for which deps. */
export interface LoadOutcome<T> {
  /** The deps, as `loadKey` spells them, the load was for. */
  key: string;
  value: T | undefined;
  error: string;
}

export function loadKey(deps: unknown[]): string {
  return JSON.stringify(deps);
}

/**
 * What to show for the deps `key`: nothing of a load for other deps (a figure of the previous
 * window under the new window's URL would pass for the new one's), and no value once a load
 * failed (a refused window, or a refresh that failed, must not leave older figures standing as
 * its answer).
 */
export function shownOutcome<T>(outcome: LoadOutcome<T>, key: string): { value: T | undefined; error: string } {
  return outcome.key === key ? { value: outcome.value, error: outcome.error } : { value: undefined, error: '' };
}

/** Loads a value when `deps` change or on `reload()`; an answer arriving after the next load started is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const key = loadKey(deps);
  const [outcome, setOutcome] = useState<LoadOutcome<T>>({ key, value: undefined, error: '' });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let cancelled = false;
    load().then(
      (value) => {
        if (!cancelled) setOutcome({ key, value, error: '' });
      },
      (err: unknown) => {
        if (!cancelled) setOutcome({ key, value: undefined, error: err instanceof Error ? err.message : String(err) });
      },
    );
    return () => {
      cancelled = true;
    };
  }, [...deps, round]);
  return { ...shownOutcome(outcome, key), reload: () => setRound(round + 1), set: (value) => setOutcome({ key, value, error: '' }) };
}
