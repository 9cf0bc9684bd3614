/** The app: session first, then the signed-in or signed-out screens for the address. */
import { useEffect } from 'react';
import { Loading } from '../components/feedback';
import { navigate, useLocation } from '../lib/router';
import { SessionProvider, useSession } from '../lib/session';
import { LINK_ROUTES, resolveSignedIn, SIGNED_OUT_ROUTES } from './routes';

function Screens() {
  const { status, can } = useSession();
  const { path } = useLocation();
  const signedOutScreen = SIGNED_OUT_ROUTES[path];
  // An invitation or reset link opened while signed in: offer to sign out, keeping the link.
  const linkScreen = status === 'signed-in' ? LINK_ROUTES[path] : undefined;
  // Where each state may not be: send signed-in people to the app, signed-out people to sign in.
  const redirect =
    status === 'signed-in' && !linkScreen && (signedOutScreen || path === '/') ? '/sandbox' : status === 'signed-out' && !signedOutScreen ? '/login' : null;
  useEffect(() => {
    if (redirect) navigate(redirect, { replace: true });
  }, [redirect]);

  let title = 'Lender portal';
  let element = <Loading label="Loading the portal…" />;
  if (status === 'signed-out' && signedOutScreen) {
    title = signedOutScreen.title;
    element = <>{signedOutScreen.render()}</>;
  } else if (linkScreen) {
    title = linkScreen.title;
    element = <>{linkScreen.render()}</>;
  } else if (status === 'signed-in' && !redirect) {
    const resolved = resolveSignedIn(path, can);
    title = resolved.title;
    element = <>{resolved.element}</>;
  }
  useEffect(() => {
    document.title = `${title} · Lender portal`;
  }, [title]);
  if (status === 'loading' || redirect) {
    return (
      <main className="boot" id="main">
        <h1 className="visually-hidden">Lender portal</h1>
        <Loading label="Loading the portal…" />
      </main>
    );
  }
  return element;
}

export function App() {
  return (
    <SessionProvider>
      <Screens />
    </SessionProvider>
  );
}
