/**
 * An invitation or password reset link opened in a browser that is already signed in (an admin
 * trying the link they just made, or a colleague's link opened on a shared machine). The link is
 * for someone who is signed out, and the portal would otherwise send a signed-in visitor to the
 * app and drop it: say whose session this is and offer to sign out, keeping the link (its token
 * stays in the address's fragment) so its screen shows next.
 */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice } from '../../../components/feedback';
import type { ApiError } from '../../../lib/api-client';
import { Link } from '../../../lib/router';
import { useSession } from '../../../lib/session';
import { AuthLayout } from './auth-layout';

export function LinkWhileSignedInScreen({ what }: { what: 'invitation' | 'password reset' }) {
  const { session, signOut } = useSession();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const leave = async () => {
    setBusy(true);
    setError(null);
    try {
      await signOut();
    } catch (err) {
      setError(err as ApiError);
      setBusy(false);
    }
  };
  return (
    <AuthLayout
      title={what === 'invitation' ? 'Join your team' : 'Set a new password'}
      intro={
        <p>
          You are signed in as <strong>{session?.user.email}</strong>. This {what} link is for someone who is signed out: sign out first to use it here.
        </p>
      }
      footer={
        <p>
          Not yours? <Link to="/sandbox">Back to the portal</Link>
        </p>
      }
    >
      <ErrorNotice error={error} title="Could not sign out" />
      <Button variant="primary" onClick={() => void leave()} disabled={busy}>
        {busy ? 'Signing out…' : `Sign out and open the ${what} link`}
      </Button>
    </AuthLayout>
  );
}
