/**
 * The signed-in user, their tenant and permissions, shared by every feature. The app asks the
 * service once on load (GET /portal/api/session, which also hands out the CSRF token) and after
 * sign-in, sign-up and sign-out. Permissions come from the service, so what the UI hides is
 * exactly what the API would refuse.
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { api, setCsrfToken, setUnauthenticatedHandler } from './api-client';

export type Role = 'admin' | 'developer' | 'underwriter' | 'viewer';
export type Permission = 'keys:read' | 'keys:write' | 'webhooks:read' | 'webhooks:write' | 'consumers:read' | 'consumers:reset' | 'users:read' | 'users:write' | 'dealers:read' | 'dealers:write' | 'decisions:read' | 'dashboard:read' | 'policy:read' | 'policy:write'
  | 'referrals:read'
  | 'referrals:act'
  | 'pii:reveal'
  | 'documents:read'
  | 'notices:read' | 'notices:write';

export interface SessionUser {
  id: string;
  email: string;
  name: string;
  role: Role;
}

export interface SessionInfo {
  authenticated: true;
  csrf_token: string;
  user: SessionUser;
  tenant: { id: string; name: string };
  permissions: Permission[];
  session: { idle_expires_at: string; absolute_expires_at: string };
}

type SessionResponse = SessionInfo | { authenticated: false; csrf_token: string };

interface SessionState {
  status: 'loading' | 'signed-out' | 'signed-in';
  session: SessionInfo | null;
  /** Why the user was sent to sign in (session expired), shown once on the sign-in screen. */
  notice: string | null;
  accept(response: SessionResponse): void;
  refresh(): Promise<void>;
  signOut(): Promise<void>;
  can(permission: Permission): boolean;
}

const SessionContext = createContext<SessionState | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [status, setStatus] = useState<SessionState['status']>('loading');
  const [session, setSession] = useState<SessionInfo | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const accept = useCallback((response: SessionResponse) => {
    setCsrfToken(response.csrf_token);
    if (response.authenticated) {
      setSession(response);
      setStatus('signed-in');
      setNotice(null);
    } else {
      setSession(null);
      setStatus('signed-out');
    }
  }, []);

  const refresh = useCallback(async () => {
    accept(await api.get<SessionResponse>('/session'));
  }, [accept]);

  useEffect(() => {
    void refresh().catch(() => setStatus('signed-out'));
    setUnauthenticatedHandler(() => {
      setNotice('Your session has ended. Sign in again to continue.');
      void refresh().catch(() => setStatus('signed-out'));
    });
    return () => setUnauthenticatedHandler(null);
  }, [refresh]);

  const signOut = useCallback(async () => {
    accept(await api.post<SessionResponse>('/logout'));
  }, [accept]);

  const value = useMemo<SessionState>(
    () => ({ status, session, notice, accept, refresh, signOut, can: (p) => session?.permissions.includes(p) ?? false }),
    [status, session, notice, accept, refresh, signOut],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside SessionProvider');
  return value;
}

/** The signed-in session (screens behind the sign-in gate only). */
export function useSignedIn(): SessionInfo & { can(permission: Permission): boolean } {
  const { session, can } = useSession();
  if (!session) throw new Error('useSignedIn without a session');
  return { ...session, can };
}
