/**
 * Sign-up: a tenant with its sandbox (three seeded consumers) and its first admin. The sandbox key
 * made at provisioning is shown here once, before the portal opens.
 */
import { useState, type FormEvent } from 'react';
import { Button } from '../../../components/button';
import { SecretOnce } from '../../../components/copy';
import { ErrorNotice } from '../../../components/feedback';
import { TextField } from '../../../components/form';
import type { ApiError } from '../../../lib/api-client';
import { Link } from '../../../lib/router';
import { useSession } from '../../../lib/session';
import { authApi, type SignUpResponse } from '../api/auth-api';
import { AuthLayout } from './auth-layout';

export function SignUpScreen() {
  const { accept } = useSession();
  const [form, setForm] = useState({ company_name: '', name: '', email: '', password: '' });
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<SignUpResponse | null>(null);
  const set = (key: keyof typeof form) => (e: { target: { value: string } }) => setForm({ ...form, [key]: e.target.value });

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setCreated(await authApi.signUp({ ...form, email: form.email.trim(), company_name: form.company_name.trim(), name: form.name.trim() }));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (created) {
    return (
      <AuthLayout title="Your sandbox is ready" intro={<p>{created.tenant.name} has a sandbox with three test consumers, and this sandbox API key.</p>}>
        <SecretOnce label="Sandbox API key" value={created.sandbox_api_key} warning="Copy it now: it is shown only this once. You can generate more keys under Settings → API keys." />
        <Button variant="primary" className="btn-block" onClick={() => accept(created)}>
          Continue to the portal
        </Button>
      </AuthLayout>
    );
  }

  return (
    <AuthLayout
      title="Create your account"
      intro={<p>Start in the sandbox: free, isolated, with the same engine and response shapes as live.</p>}
      footer={
        <p>
          Already have an account? <Link to="/login">Sign in</Link>
        </p>
      }
    >
      <ErrorNotice error={error} title="Could not create the account" />
      <form onSubmit={submit} className="stack" noValidate>
        <TextField label="Company name" name="company_name" autoComplete="organization" required value={form.company_name} onChange={set('company_name')} />
        <TextField label="Your name" name="name" autoComplete="name" required value={form.name} onChange={set('name')} />
        <TextField label="Work email" type="email" name="email" autoComplete="email" required value={form.email} onChange={set('email')} />
        <TextField label="Password" type="password" name="password" autoComplete="new-password" hint="At least 12 characters. A passphrase works well." required value={form.password} onChange={set('password')} />
        <Button type="submit" variant="primary" disabled={busy} className="btn-block">
          {busy ? 'Creating your sandbox…' : 'Create account'}
        </Button>
      </form>
    </AuthLayout>
  );
}
