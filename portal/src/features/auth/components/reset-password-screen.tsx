/**
 * The password reset link (/portal/reset-password#<token>) an admin made and handed over: whose
 * password, in which team, then the new password twice. The token stays in the fragment (never
 * sent in a path or query) and goes to the service only in POST bodies. Setting the password signs
 * the person in, as accepting an invitation does, and ends their other sessions.
 */
import { useRef, useState, type FormEvent } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { TextField } from '../../../components/form';
import type { ApiError } from '../../../lib/api-client';
import { formatDateTime } from '../../../lib/format';
import { NEW_PASSWORD_HINT, newPasswordProblems, type NewPasswordProblems } from '../../../lib/passwords';
import { Link } from '../../../lib/router';
import { useSession } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { authApi } from '../api/auth-api';
import { AuthLayout } from './auth-layout';

export function ResetPasswordScreen() {
  const { accept } = useSession();
  const token = window.location.hash.replace(/^#/, '');
  const link = useAsync(() => authApi.lookUpPasswordReset(token), [token]);
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [problems, setProblems] = useState<NewPasswordProblems>({ password: null, confirm: null });
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    const found = newPasswordProblems(password, confirm);
    setProblems(found);
    if (found.password || found.confirm) {
      formRef.current?.querySelector<HTMLInputElement>('[aria-invalid="true"]')?.focus();
      return;
    }
    setBusy(true);
    try {
      const session = await authApi.acceptPasswordReset({ token, password });
      // The token leaves the address bar (and so the history) with the signed-out screen.
      window.history.replaceState(null, '', '/portal/sandbox');
      accept(session);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (link.loading) return <AuthLayout title="Set a new password"><Loading /></AuthLayout>;
  if (!link.data) {
    return (
      <AuthLayout title="Password reset link not valid">
        <Notice tone="warning">{token === '' ? 'This password reset link is incomplete; open the whole link you were given.' : (link.error?.message ?? 'This password reset link is not valid.')}</Notice>
        <p>
          <Link to="/login">Go to sign in</Link>
        </p>
      </AuthLayout>
    );
  }
  return (
    <AuthLayout
      title="Set a new password"
      intro={
        <p>
          Set a new password for <strong>{link.data.email}</strong> ({link.data.tenant_name}). The link works once, until {formatDateTime(link.data.expires_at)}; your other sessions will be signed out.
        </p>
      }
      footer={
        <p>
          Remember your password? <Link to="/login">Sign in</Link>
        </p>
      }
    >
      <ErrorNotice error={error} title="Could not set the password" />
      <form ref={formRef} onSubmit={submit} className="stack" noValidate>
        <TextField label="New password" type="password" name="new-password" autoComplete="new-password" hint={NEW_PASSWORD_HINT} required value={password} onChange={(e) => setPassword(e.target.value)} error={problems.password} />
        <TextField label="Confirm new password" type="password" name="confirm-password" autoComplete="new-password" required value={confirm} onChange={(e) => setConfirm(e.target.value)} error={problems.confirm} />
        <Button type="submit" variant="primary" disabled={busy} className="btn-block">
          {busy ? 'Saving…' : 'Set password and sign in'}
        </Button>
      </form>
    </AuthLayout>
  );
}
