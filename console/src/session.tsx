import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';
import { keyPrefix } from '../../src/domain/resources.ts';
import { createClient, type WharfClient } from './api.ts';

/**
 * The API key lives in sessionStorage only: it survives a reload of the tab and is gone when the tab closes.
 * It is never written to localStorage, a cookie or a URL.
 */
const STORAGE_KEY = 'wharf.console.apiKey';

export interface Session {
  client: WharfClient;
  /** What key listings show as this key's prefix. */
  keyPrefix: string;
  signOut: () => void;
}

interface SessionState {
  session: Session | null;
  signIn: (apiKey: string) => void;
}

const SessionContext = createContext<SessionState | null>(null);

function readKey(): string | null {
  try {
    return window.sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [apiKey, setApiKey] = useState<string | null>(readKey);
  const signOut = useCallback(() => {
    try {
      window.sessionStorage.removeItem(STORAGE_KEY);
    } catch {
      // storage disabled: the key was only in memory
    }
    setApiKey(null);
  }, []);
  const signIn = useCallback((key: string) => {
    try {
      window.sessionStorage.setItem(STORAGE_KEY, key);
    } catch {
      // storage disabled: keep the key in memory for this page only
    }
    setApiKey(key);
  }, []);
  const session = useMemo<Session | null>(
    () => (apiKey ? { client: createClient(apiKey), keyPrefix: keyPrefix(apiKey), signOut } : null),
    [apiKey, signOut],
  );
  const value = useMemo(() => ({ session, signIn }), [session, signIn]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSessionState(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSessionState outside SessionProvider');
  return state;
}

/** The signed-in session; only pages rendered after sign-in call this. */
export function useSession(): Session {
  const { session } = useSessionState();
  if (!session) throw new Error('not signed in');
  return session;
}

export function useClient(): WharfClient {
  return useSession().client;
}
