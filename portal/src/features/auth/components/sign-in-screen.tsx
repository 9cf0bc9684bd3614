import { useState, type FormEvent } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice, Notice } from '../../../components/feedback';
import { TextField } from '../../../components/form';
import type { ApiError } from '../../../lib/api-client';
import { Link } from '../../../lib/router';
import { useSession } from '../../../lib/session';
import { authApi } from '../api/auth-api';
import { AuthLayout } from './auth-layout';

export function SignInScreen() {
  const { accept, notice } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      accept(await authApi.signIn({ email: email.trim(), password }));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthLayout
      title="Sign in"
      intro={<p>Manage API keys, webhook endpoints and your sandbox.</p>}
      footer={
        <p>
          New to the service? <Link to="/signup">Create an account</Link>
        </p>
      }
    >
      {notice ? <Notice tone="warning">{notice}</Notice> : null}
      <ErrorNotice error={error} title="Could not sign in" />
      <form onSubmit={submit} className="stack" noValidate>
        <TextField label="Work email" type="email" name="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <TextField label="Password" type="password" name="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        <Button type="submit" variant="primary" disabled={busy} className="btn-block">
          {busy ? 'Signing in…' : 'Sign in'}
        </Button>
      </form>
    </AuthLayout>
  );
}
