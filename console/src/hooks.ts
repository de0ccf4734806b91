import { useCallback, useEffect, useRef, useState } from 'react';

export interface Poll<T> {
  data: T | undefined;
  /** The last failure; cleared by the next success. The last good data stays shown meanwhile. */
  error: unknown;
  loading: boolean;
  updatedAt: number | null;
  refresh: () => void;
}

/**
 * Load now and again every `intervalMs` while mounted (live updates without reloading). A new `key` starts over.
 * Polls are skipped while the tab is hidden, and never overlap.
 */
export function usePoll<T>(key: string, load: () => Promise<T>, intervalMs: number): Poll<T> {
  const [state, setState] = useState<{ key: string; data: T | undefined; error: unknown; updatedAt: number | null }>({
    key,
    data: undefined,
    error: null,
    updatedAt: null,
  });
  const loadRef = useRef(load);
  const kick = useRef<() => void>(() => undefined);
  useEffect(() => {
    loadRef.current = load;
  });

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    let again = false;
    let first = true;
    setState((s) => (s.key === key ? s : { key, data: undefined, error: null, updatedAt: null }));
    const tick = async () => {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      clearTimeout(timer);
      running = true;
      try {
        if (!document.hidden || first) {
          first = false;
          const data = await loadRef.current();
          if (!stopped) setState({ key, data, error: null, updatedAt: Date.now() });
        }
      } catch (error) {
        if (!stopped) setState((s) => ({ ...s, key, error }));
      } finally {
        running = false;
        if (!stopped) {
          if (again) {
            again = false;
            void tick();
          } else {
            timer = setTimeout(() => void tick(), intervalMs);
          }
        }
      }
    };
    kick.current = () => void tick();
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [key, intervalMs]);

  const refresh = useCallback(() => kick.current(), []);
  const current = state.key === key;
  return {
    data: current ? state.data : undefined,
    error: current ? state.error : null,
    loading: !current || (state.data === undefined && state.error === null),
    updatedAt: current ? state.updatedAt : null,
    refresh,
  };
}

export interface Action<A extends unknown[], R> {
  run: (...args: A) => Promise<R | undefined>;
  pending: boolean;
  error: unknown;
  clear: () => void;
}

/** A button's or form's async action: pending while it runs, the failure kept to show next to it. */
export function useAction<A extends unknown[], R>(fn: (...args: A) => Promise<R>): Action<A, R> {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const fnRef = useRef(fn);
  useEffect(() => {
    fnRef.current = fn;
  });
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  const run = useCallback(async (...args: A) => {
    setPending(true);
    setError(null);
    try {
      return await fnRef.current(...args);
    } catch (e) {
      if (mounted.current) setError(e);
      return undefined;
    } finally {
      if (mounted.current) setPending(false);
    }
  }, []);
  const clear = useCallback(() => setError(null), []);
  return { run, pending, error, clear };
}

/** The page title, as screen readers and the tab strip show it. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Wharf console`;
  }, [title]);
}
