/**
 * Settings -> Users (admins): who can sign in, with which role; invitations; role changes; removal;
 * one-time password reset links (there is no email: the admin hands the link over, as invitations).
 */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { SecretOnce } from '../../../components/copy';
import { ConfirmDialog, Dialog } from '../../../components/dialog';
import { Badge, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { RadioGroup, SelectField, TextField } from '../../../components/form';
import { Card, PageHeader } from '../../../components/page';
import { DataTable, Pagination } from '../../../components/table';
import type { ApiError } from '../../../lib/api-client';
import { formatDateTime, formatRelative, titleCase } from '../../../lib/format';
import { useSignedIn, type Role } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { usersApi, type PasswordReset, type TeamMember } from '../api/users-api';

const ROLE_OPTIONS: Array<{ value: Role; label: string; description: string }> = [
  { value: 'admin', label: 'Admin', description: 'Everything, including users and roles.' },
  { value: 'developer', label: 'Developer', description: 'API keys, webhook endpoints, sandbox consumers.' },
  { value: 'underwriter', label: 'Underwriter', description: 'Reads settings here; works the referral queue.' },
  { value: 'viewer', label: 'Viewer', description: 'Read-only.' },
];

function InviteDialog({ open, onClose, onInvited }: { open: boolean; onClose(): void; onInvited(): void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('developer');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [link, setLink] = useState<string | null>(null);
  const close = () => {
    setEmail('');
    setLink(null);
    setError(null);
    onClose();
  };
  const invite = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await usersApi.invite(email.trim(), role);
      setLink(r.invite_url);
      onInvited();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  if (link) {
    return (
      <Dialog open={open} title="Invitation created" onClose={close} footer={<Button variant="primary" onClick={close}>Done</Button>}>
        <SecretOnce label="Invitation link" value={link} warning="Send this link to the person you invited. It works once and expires in 7 days; it is not shown again." />
      </Dialog>
    );
  }
  return (
    <Dialog
      open={open}
      title="Invite a user"
      onClose={close}
      footer={
        <>
          <Button onClick={close}>Cancel</Button>
          <Button variant="primary" disabled={busy || email.trim() === ''} onClick={() => void invite()}>
            {busy ? 'Inviting…' : 'Create invitation'}
          </Button>
        </>
      }
    >
      <ErrorNotice error={error} title="Could not invite" />
      <TextField label="Email" type="email" value={email} onChange={(e) => setEmail(e.target.value)} />
      <RadioGroup legend="Role" name="role" value={role} onChange={setRole} options={ROLE_OPTIONS} />
    </Dialog>
  );
}

/** Confirm, then the member's reset link, shown once (one dialog, as the invitation's). */
function ResetPasswordDialog({ member, onClose, onGone }: { member: TeamMember | null; onClose(): void; onGone(): void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [reset, setReset] = useState<PasswordReset | null>(null);
  const close = () => {
    setReset(null);
    setError(null);
    onClose();
  };
  const create = async () => {
    if (!member) return;
    setBusy(true);
    setError(null);
    try {
      setReset(await usersApi.createPasswordReset(member.id));
    } catch (err) {
      setError(err as ApiError);
      // Removed meanwhile (by another admin): the list is out of date.
      if ((err as ApiError).status === 404) onGone();
    } finally {
      setBusy(false);
    }
  };
  if (reset) {
    return (
      <Dialog open={member !== null} title="Password reset link created" onClose={close} footer={<Button variant="primary" onClick={close}>Done</Button>}>
        <SecretOnce
          label="Password reset link"
          value={reset.reset_url}
          warning={`Give this link to ${reset.user.name} (${reset.user.email}) yourself. It works once and expires at ${formatDateTime(reset.expires_at)}; it is not shown again.`}
        />
      </Dialog>
    );
  }
  return (
    <Dialog
      open={member !== null}
      title="Reset password"
      onClose={close}
      footer={
        <>
          <Button onClick={close}>Cancel</Button>
          <Button variant="primary" disabled={busy} onClick={() => void create()}>
            {busy ? 'Creating…' : 'Create reset link'}
          </Button>
        </>
      }
    >
      <ErrorNotice error={error} title="Could not create the link" />
      <p>Create a one-time link for {member?.name} to set a new password? The link works once, for 24 hours. Their current password keeps working until the link is used.</p>
      <p className="muted small">A link made for them earlier stops working.</p>
    </Dialog>
  );
}

export function UsersScreen() {
  const session = useSignedIn();
  const [page, setPage] = useState(1);
  const users = useAsync(() => usersApi.list(page), [page]);
  const invitations = useAsync(() => usersApi.invitations(), []);
  const [inviting, setInviting] = useState(false);
  const [removing, setRemoving] = useState<TeamMember | null>(null);
  const [resetting, setResetting] = useState<TeamMember | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const act = async (action: () => Promise<string>) => {
    setBusy(true);
    setError(null);
    setMessage(null);
    try {
      setMessage(await action());
      users.reload();
      invitations.reload();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageHeader eyebrow="Settings" title="Users" description={`People who can sign in to ${session.tenant.name}'s portal, and what each may do.`} actions={<Button variant="primary" onClick={() => setInviting(true)}>Invite user</Button>} />
      {message ? <Notice tone="success">{message}</Notice> : null}
      <ErrorNotice error={error} />
      <Card title="Team">
        {users.data ? (
          <>
            <DataTable
              caption="Users"
              rows={users.data.data}
              rowKey={(u) => u.id}
              columns={[
                { header: 'Name', cell: (u) => <>{u.name}{u.id === session.user.id ? <span className="muted small"> (you)</span> : null}</> },
                { header: 'Email', cell: (u) => u.email },
                {
                  header: 'Role',
                  cell: (u) =>
                    u.id === session.user.id ? (
                      <Badge tone="info">{titleCase(u.role)}</Badge>
                    ) : (
                      <SelectField label={`Role of ${u.name}`} className="inline-field label-hidden" value={u.role} disabled={busy} onChange={(e) => void act(async () => {
                        await usersApi.changeRole(u.id, e.target.value as Role);
                        return `${u.name} is now ${titleCase(e.target.value)}.`;
                      })}>
                        {ROLE_OPTIONS.map((r) => (
                          <option key={r.value} value={r.value}>
                            {r.label}
                          </option>
                        ))}
                      </SelectField>
                    ),
                },
                { header: 'Last sign-in', cell: (u) => <span title={formatDateTime(u.last_login_at)}>{formatRelative(u.last_login_at)}</span> },
                {
                  header: 'Actions',
                  className: 'col-actions',
                  cell: (u) =>
                    u.id === session.user.id ? null : (
                      <span className="row-actions">
                        {session.can('users:write') ? (
                          <Button size="small" onClick={() => setResetting(u)} aria-label={`Reset password of ${u.name}`}>
                            Reset password
                          </Button>
                        ) : null}
                        <Button size="small" variant="danger" onClick={() => setRemoving(u)} aria-label={`Remove ${u.name}`}>
                          Remove
                        </Button>
                      </span>
                    ),
                },
              ]}
            />
            <Pagination page={users.data.page} pageSize={users.data.page_size} total={users.data.total} count={users.data.data.length} onPage={setPage} />
          </>
        ) : (
          <Loading />
        )}
      </Card>
      <Card title="Open invitations">
        {invitations.data ? (
          <DataTable
            caption="Open invitations"
            rows={invitations.data.data}
            rowKey={(i) => i.id}
            empty="No open invitations."
            columns={[
              { header: 'Email', cell: (i) => i.email },
              { header: 'Role', cell: (i) => titleCase(i.role) },
              { header: 'Expires', cell: (i) => formatDateTime(i.expires_at) },
              {
                header: 'Actions',
                className: 'col-actions',
                cell: (i) => (
                  <Button size="small" onClick={() => void act(async () => {
                    await usersApi.revokeInvitation(i.id);
                    return `The invitation for ${i.email} was revoked.`;
                  })}>
                    Revoke
                  </Button>
                ),
              },
            ]}
          />
        ) : (
          <Loading />
        )}
      </Card>
      <InviteDialog open={inviting} onClose={() => setInviting(false)} onInvited={() => invitations.reload()} />
      <ResetPasswordDialog member={resetting} onClose={() => setResetting(null)} onGone={() => users.reload()} />
      <ConfirmDialog open={removing !== null} title="Remove this user?" confirmLabel="Remove user" danger busy={busy} onClose={() => setRemoving(null)} onConfirm={() => void act(async () => {
        const who = removing!;
        await usersApi.remove(who.id);
        setRemoving(null);
        return `${who.name} was removed and signed out everywhere.`;
      })}>
        <p>{removing?.name} ({removing?.email}) can no longer sign in; their open sessions end at once.</p>
      </ConfirmDialog>
    </>
  );
}
