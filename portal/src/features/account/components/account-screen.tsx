/**
 * Settings -> Account (every role): who is signed in, in which organisation, and changing one's own
 * password. A change ends every session of this user; this browser is signed in again at once with
 * a new session (the service renews it, so a copy of the old session cookie stops working).
 */
import { useRef, useState, type FormEvent } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice, Notice } from '../../../components/feedback';
import { TextField } from '../../../components/form';
import { Card, DetailList, PageHeader } from '../../../components/page';
import type { ApiError } from '../../../lib/api-client';
import { titleCase } from '../../../lib/format';
import { NEW_PASSWORD_HINT, newPasswordProblems, type NewPasswordProblems } from '../../../lib/passwords';
import { useSession, useSignedIn } from '../../../lib/session';
import { accountApi } from '../api/account-api';

const EMPTY = { current: '', password: '', confirm: '' };
const NO_PROBLEMS: NewPasswordProblems & { current: string | null } = { current: null, password: null, confirm: null };

function ChangePasswordForm() {
  const { accept } = useSession();
  const [form, setForm] = useState(EMPTY);
  const [problems, setProblems] = useState(NO_PROBLEMS);
  const [error, setError] = useState<ApiError | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);
  const set = (key: keyof typeof EMPTY) => (e: { target: { value: string } }) => setForm({ ...form, [key]: e.target.value });

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    setDone(false);
    const found = { current: form.current === '' ? 'Enter your current password.' : null, ...newPasswordProblems(form.password, form.confirm) };
    setProblems(found);
    if (found.current || found.password || found.confirm) {
      // Keyboard and screen-reader users land on the first field to fix.
      formRef.current?.querySelector<HTMLInputElement>('[aria-invalid="true"]')?.focus();
      return;
    }
    setBusy(true);
    try {
      accept(await accountApi.changePassword({ current_password: form.current, new_password: form.password }));
      setForm(EMPTY);
      setDone(true);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      {done ? <Notice tone="success">Password changed. Your other sessions were signed out, and this one was renewed.</Notice> : null}
      <ErrorNotice error={error} title="Could not change the password" />
      <form ref={formRef} onSubmit={submit} className="stack form-narrow" noValidate>
        <TextField label="Current password" type="password" name="current-password" autoComplete="current-password" required value={form.current} onChange={set('current')} error={problems.current} />
        <TextField label="New password" type="password" name="new-password" autoComplete="new-password" hint={NEW_PASSWORD_HINT} required value={form.password} onChange={set('password')} error={problems.password} />
        <TextField label="Confirm new password" type="password" name="confirm-password" autoComplete="new-password" required value={form.confirm} onChange={set('confirm')} error={problems.confirm} />
        <div>
          <Button type="submit" variant="primary" disabled={busy}>
            {busy ? 'Changing…' : 'Change password'}
          </Button>
        </div>
      </form>
    </>
  );
}

export function AccountScreen() {
  const session = useSignedIn();
  return (
    <>
      <PageHeader eyebrow="Settings" title="Account" description="Who you are signed in as, and your password." />
      <Card title="Your account">
        <DetailList
          items={[
            ['Name', session.user.name],
            ['Email', session.user.email],
            ['Role', titleCase(session.user.role)],
            ['Organisation', session.tenant.name],
          ]}
        />
      </Card>
      <Card title="Change password">
        <p className="muted">Changing your password signs you out everywhere else; this browser stays signed in.</p>
        <ChangePasswordForm />
      </Card>
    </>
  );
}
