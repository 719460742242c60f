import { useEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  value: T | undefined;
  /** The last load's failure message, '' after a success. */
  error: string;
  reload: () => void;
  set: (v: T) => void;
}

/** Loads a value when `deps` change or on `reload()`; an answer arriving after the next load started is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [value, setValue] = useState<T | undefined>();
  const [error, setError] = useState('');
  const [round, setRound] = useState(0);
  useEffect(() => {
    let cancelled = false;
    load().then(
      (v) => {
        if (!cancelled) {
          setValue(v);
          setError('');
        }
      },
      (err: unknown) => {
        if (!cancelled) setError(err instanceof Error ? err.message : String(err));
      },
    );
    return () => {
      cancelled = true;
    };
  }, [...deps, round]);
  return { value, error, reload: () => setRound(round + 1), set: setValue };
}
