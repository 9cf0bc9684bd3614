/** Load data for a screen: re-runs when its inputs change, exposes reload for after an action. */
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError } from './api-client';

export interface AsyncState<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload(): void;
}

export function useAsync<T>(load: () => Promise<T>, deps: readonly unknown[]): AsyncState<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const latest = useRef(0);

  useEffect(() => {
    const run = ++latest.current;
    setLoading(true);
    load()
      .then((value) => {
        if (run !== latest.current) return;
        setData(value);
        setError(null);
      })
      .catch((err: unknown) => {
        if (run !== latest.current) return;
        setError(err instanceof ApiError ? err : new ApiError(0, 'error', String(err), null));
      })
      .finally(() => {
        if (run === latest.current) setLoading(false);
      });
  }, [...deps, tick]); // callers list the inputs of `load` in deps

  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data, error, loading, reload };
}
