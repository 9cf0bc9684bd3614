/**
 * The signed-in frame: a header with the tenant, the environment switch (always visible, and
 * colour-coded so sandbox and live are never confused), the user and sign-out; the navigation;
 * the page. Live gets an amber band and a banner on every screen.
 */
import { useState, type ReactNode } from 'react';
import { Button } from '../../../components/button';
import { switchEnvironmentPath, useEnvironment, type Environment } from '../../../lib/environment';
import { titleCase } from '../../../lib/format';
import { Link, useLocation } from '../../../lib/router';
import { useSession, useSignedIn } from '../../../lib/session';

function EnvironmentSwitch() {
  const environment = useEnvironment();
  const { path } = useLocation();
  const option = (env: Environment, label: string) => (
    <Link to={switchEnvironmentPath(path, env)} className={`env-option env-option-${env}`} aria-current={environment === env ? 'true' : undefined} data-env={env}>
      {label}
    </Link>
  );
  return (
    <nav className="env-switch" aria-label="Environment">
      {option('sandbox', 'Sandbox')}
      {option('live', 'Live')}
    </nav>
  );
}

export function AppShell({ children }: { children: ReactNode }) {
  const session = useSignedIn();
  const { signOut } = useSession();
  const environment = useEnvironment();
  const { path } = useLocation();
  const [busy, setBusy] = useState(false);
  const nav: Array<{ to: string; label: string; section: string; show: boolean }> = [
    { to: `/${environment}`, label: 'Overview', section: '', show: true },
    { to: `/${environment}/api-keys`, label: 'API keys', section: 'api-keys', show: session.can('keys:read') },
    { to: `/${environment}/webhooks`, label: 'Webhooks', section: 'webhooks', show: session.can('webhooks:read') },
    { to: `/${environment}/credit-policy`, label: 'Credit policy', section: 'credit-policy', show: session.can('policy:read') },
    { to: `/${environment}/consumers`, label: 'Sandbox consumers', section: 'consumers', show: session.can('consumers:read') },
    { to: `/${environment}/dealers`, label: 'Dealers', section: 'dealers', show: session.can('dealers:read') },
    { to: `/${environment}/referrals`, label: 'Referral queue', section: 'referrals', show: session.can('referrals:read') },
    { to: `/${environment}/verification-review`, label: 'Verification review', section: 'verification-review', show: session.can('referrals:read') },
    { to: `/${environment}/settings/users`, label: 'Users', section: 'settings/users', show: session.can('users:read') },
    { to: `/${environment}/settings/account`, label: 'Account', section: 'settings/account', show: true },
    { to: `/${environment}/settings/notices`, label: 'Adverse-action notices', section: 'settings/notices', show: session.can('notices:read') },
    { to: `/${environment}/decisions`, label: 'Decisions', section: 'decisions', show: session.can('decisions:read') },
    { to: `/${environment}/dashboard`, label: 'Dashboard', section: 'dashboard', show: session.can('dashboard:read') },
  ];
  // The part after the environment ('webhooks/<id>', 'settings/users'): an entry is current on its
  // own page and on the pages under it; the overview ('') only on itself.
  const here = path.split('/').slice(2).join('/');
  const isCurrent = (section: string) => (section === '' ? here === '' : here === section || here.startsWith(`${section}/`));

  return (
    <div className={`shell env-${environment}`}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <div className="topbar-brand">
          <span className="brand-mark" aria-hidden="true" />
          <span className="brand-name">Credit Decisioning</span>
          <span className="tenant-name" title="Your organisation">
            {session.tenant.name}
          </span>
        </div>
        <EnvironmentSwitch />
        <div className="topbar-user">
          <span className="user-name">
            {session.user.name} <span className="user-role">{titleCase(session.user.role)}</span>
          </span>
          <Button
            size="small"
            variant="ghost"
            disabled={busy}
            onClick={() => {
              setBusy(true);
              void signOut().finally(() => setBusy(false));
            }}
          >
            Sign out
          </Button>
        </div>
      </header>
      <div className={`env-banner env-banner-${environment}`} role="note">
        {environment === 'live' ? (
          <>
            <strong>Live environment.</strong> Real applicants, real credit data, real money. Changes here affect production.
          </>
        ) : (
          <>
            <strong>Sandbox environment.</strong> Test data only: the same engine and responses as live, no real credit pulls, free.
          </>
        )}
      </div>
      <div className="shell-body">
        <nav className="sidenav" aria-label="Main">
          <ul>
            {nav
              .filter((n) => n.show)
              .map((n) => (
                <li key={n.label}>
                  <Link to={n.to} aria-current={isCurrent(n.section) ? 'page' : undefined}>
                    {n.label}
                  </Link>
                </li>
              ))}
            {/* The documentation site is served by the service itself, outside the portal app. */}
            <li className="sidenav-docs">
              <a href="/docs">Documentation</a>
            </li>
          </ul>
        </nav>
        <main id="main" className="content" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}
