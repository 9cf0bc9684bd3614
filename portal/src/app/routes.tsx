/**
 * The screens and their addresses. Features never import each other; this file composes them.
 * Signed-out: /login, /signup, /invitation#<token>, /reset-password#<token>. Signed-in: /<environment>/<section>.
 */
import { lazy, Suspense, type ReactNode } from 'react';
import { Loading, Notice } from '../components/feedback';
import { PageHeader } from '../components/page';
import { AccountScreen } from '../features/account/components/account-screen';
import { ApiKeysScreen } from '../features/api-keys/components/api-keys-screen';
import { PolicyEditorScreen } from '../features/credit-policy/components/policy-editor-screen';
import { PolicyScreen } from '../features/credit-policy/components/policy-screen';
import { PolicyVersionScreen } from '../features/credit-policy/components/policy-version-screen';
import { AcceptInvitationScreen } from '../features/auth/components/accept-invitation-screen';
import { LinkWhileSignedInScreen } from '../features/auth/components/link-while-signed-in-screen';
import { ResetPasswordScreen } from '../features/auth/components/reset-password-screen';
import { SignInScreen } from '../features/auth/components/sign-in-screen';
import { SignUpScreen } from '../features/auth/components/sign-up-screen';
import { DealersScreen } from '../features/dealers/components/dealers-screen';
import { NoticeScreen } from '../features/notices/components/notice-screen';
import { NoticeSettingsScreen } from '../features/notices/components/notice-settings-screen';
import { AppShell } from '../features/layout/components/app-shell';
import { OverviewScreen } from '../features/overview/components/overview-screen';
import { DecisionDetailScreen } from '../features/decisions/components/decision-detail-screen';
import { DecisionsScreen } from '../features/decisions/components/decisions-screen';
import { ConsumerDetailScreen } from '../features/sandbox-consumers/components/consumer-detail-screen';
import { ConsumersScreen } from '../features/sandbox-consumers/components/consumers-screen';
import { UsersScreen } from '../features/users/components/users-screen';
import { EndpointDetailScreen } from '../features/webhooks/components/endpoint-detail-screen';
import { ReferralDetailScreen } from '../features/referrals/components/referral-detail-screen';
import { ReferralsScreen } from '../features/referrals/components/referrals-screen';
import { VerificationReviewScreen } from '../features/verification-review/components/verification-review-screen';
import { WebhooksScreen } from '../features/webhooks/components/webhooks-screen';
import { matchPath } from '../lib/router';
import type { Permission } from '../lib/session';

// The dashboard carries the chart library (recharts): loaded only when it is opened.
const DashboardScreen = lazy(() => import('../features/dashboard/components/dashboard-screen'));

interface SignedInRoute {
  pattern: string;
  title: string;
  permission?: Permission;
  render(params: Record<string, string>): ReactNode;
}

export const SIGNED_IN_ROUTES: SignedInRoute[] = [
  { pattern: '/:env', title: 'Overview', render: () => <OverviewScreen /> },
  { pattern: '/:env/api-keys', title: 'API keys', permission: 'keys:read', render: () => <ApiKeysScreen /> },
  { pattern: '/:env/webhooks', title: 'Webhooks', permission: 'webhooks:read', render: () => <WebhooksScreen /> },
  { pattern: '/:env/webhooks/:id', title: 'Webhook endpoint', permission: 'webhooks:read', render: (p) => <EndpointDetailScreen key={p.id} id={p.id!} /> },
  { pattern: '/:env/consumers', title: 'Sandbox consumers', permission: 'consumers:read', render: () => <ConsumersScreen /> },
  { pattern: '/:env/consumers/:id', title: 'Sandbox consumer', permission: 'consumers:read', render: (p) => <ConsumerDetailScreen key={p.id} id={p.id!} /> },
  { pattern: '/:env/dealers', title: 'Dealers', permission: 'dealers:read', render: () => <DealersScreen /> },
  { pattern: '/:env/credit-policy', title: 'Credit policy', permission: 'policy:read', render: () => <PolicyScreen /> },
  { pattern: '/:env/credit-policy/:product/new', title: 'New policy version', permission: 'policy:write', render: (p) => <PolicyEditorScreen key={p.product} product={p.product!} /> },
  { pattern: '/:env/credit-policy/:product/versions/:id', title: 'Policy version', permission: 'policy:read', render: (p) => <PolicyVersionScreen key={p.id} product={p.product!} id={p.id!} /> },
  { pattern: '/:env/referrals', title: 'Referral queue', permission: 'referrals:read', render: () => <ReferralsScreen /> },
  { pattern: '/:env/referrals/:id', title: 'Referred decision', permission: 'referrals:read', render: (p) => <ReferralDetailScreen key={p.id} id={p.id!} /> },
  { pattern: '/:env/verification-review', title: 'Verification review', permission: 'referrals:read', render: () => <VerificationReviewScreen /> },
  { pattern: '/:env/settings/users', title: 'Users', permission: 'users:read', render: () => <UsersScreen /> },
  { pattern: '/:env/settings/account', title: 'Account', render: () => <AccountScreen /> },
  { pattern: '/:env/settings/notices', title: 'Adverse-action notices', permission: 'notices:read', render: () => <NoticeSettingsScreen /> },
  { pattern: '/:env/decisions', title: 'Decisions', permission: 'decisions:read', render: () => <DecisionsScreen /> },
  { pattern: '/:env/decisions/:id', title: 'Decision', permission: 'decisions:read', render: (p) => <DecisionDetailScreen key={p.id} id={p.id!} /> },
  // Making a notice names the applicant: the same permission as revealing them in the referral queue.
  { pattern: '/:env/decisions/:id/notice', title: 'Adverse-action notice', permission: 'pii:reveal', render: (p) => <NoticeScreen key={p.id} id={p.id!} /> },
  {
    pattern: '/:env/dashboard',
    title: 'Dashboard',
    permission: 'dashboard:read',
    render: () => (
      <Suspense fallback={<Loading label="Loading the dashboard…" />}>
        <DashboardScreen />
      </Suspense>
    ),
  },
];

export const SIGNED_OUT_ROUTES: Record<string, { title: string; render(): ReactNode }> = {
  '/login': { title: 'Sign in', render: () => <SignInScreen /> },
  '/signup': { title: 'Create your account', render: () => <SignUpScreen /> },
  '/invitation': { title: 'Join your team', render: () => <AcceptInvitationScreen /> },
  '/reset-password': { title: 'Set a new password', render: () => <ResetPasswordScreen /> },
};

/** Signed-out screens opened from a link someone was given: a signed-in visitor is offered to sign out, not sent away (the link would be lost). */
export const LINK_ROUTES: Record<string, { title: string; render(): ReactNode }> = {
  '/invitation': { title: 'Join your team', render: () => <LinkWhileSignedInScreen what="invitation" /> },
  '/reset-password': { title: 'Set a new password', render: () => <LinkWhileSignedInScreen what="password reset" /> },
};

export function resolveSignedIn(path: string, can: (p: Permission) => boolean): { title: string; element: ReactNode } {
  const env = path.split('/')[1];
  if (env === 'sandbox' || env === 'live') {
    for (const route of SIGNED_IN_ROUTES) {
      const params = matchPath(route.pattern, path);
      if (!params) continue;
      if (route.permission && !can(route.permission)) {
        return { title: 'Not allowed', element: <AppShell><PageHeader title="Not allowed" /><Notice tone="warning">Your role does not give access to this page.</Notice></AppShell> };
      }
      return { title: route.title, element: <AppShell>{route.render(params)}</AppShell> };
    }
  }
  return { title: 'Page not found', element: <AppShell><PageHeader title="Page not found" /><Notice tone="info">There is no page at this address.</Notice></AppShell> };
}
