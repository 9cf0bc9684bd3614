/** The invitation link (/portal/invitation#<token>): who invited you to what, then name and password. */
import { useState, type FormEvent } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { TextField } from '../../../components/form';
import type { ApiError } from '../../../lib/api-client';
import { titleCase } from '../../../lib/format';
import { Link } from '../../../lib/router';
import { useSession } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { authApi } from '../api/auth-api';
import { AuthLayout } from './auth-layout';

export function AcceptInvitationScreen() {
  const { accept } = useSession();
  const token = window.location.hash.replace(/^#/, '');
  const invitation = useAsync(() => authApi.lookUpInvitation(token), [token]);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await authApi.acceptInvitation({ token, name: name.trim(), password });
      window.history.replaceState(null, '', '/portal/sandbox');
      accept(session);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (invitation.loading) return <AuthLayout title="Join your team"><Loading /></AuthLayout>;
  if (!invitation.data) {
    return (
      <AuthLayout title="Invitation not valid">
        <Notice tone="warning">{invitation.error?.message ?? 'This invitation link is not valid.'}</Notice>
        <p>
          <Link to="/login">Go to sign in</Link>
        </p>
      </AuthLayout>
    );
  }
  return (
    <AuthLayout title="Join your team" intro={<p>You were invited to <strong>{invitation.data.tenant_name}</strong> as <strong>{titleCase(invitation.data.role)}</strong>, with the email {invitation.data.email}.</p>}>
      <ErrorNotice error={error} title="Could not accept the invitation" />
      <form onSubmit={submit} className="stack" noValidate>
        <TextField label="Your name" name="name" autoComplete="name" required value={name} onChange={(e) => setName(e.target.value)} />
        <TextField label="Choose a password" type="password" name="password" autoComplete="new-password" hint="At least 12 characters." required value={password} onChange={(e) => setPassword(e.target.value)} />
        <Button type="submit" variant="primary" disabled={busy} className="btn-block">
          {busy ? 'Joining…' : 'Accept invitation'}
        </Button>
      </form>
    </AuthLayout>
  );
}
