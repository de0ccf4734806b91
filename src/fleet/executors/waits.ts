// Small helpers every executor uses around its hooks and its waits for a worker to exit.

/** Runs a hook. Hooks are the supervisor's code; a throw there must not break the executor's bookkeeping. */
export function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // the supervisor's problem, not the executor's
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((res) => setTimeout(res, ms));

/** Whether `p` settled within `ms`; the timer is cleared either way so nothing is left pending. */
export async function waitFor(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((res) => (timer = setTimeout(() => res(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
