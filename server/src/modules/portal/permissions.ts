/**
 * Who may do what in the lender portal: a pure table from role to permissions, checked by every
 * portal route before it runs (portal-http.ts). Reading is open to every role (the referral queue
 * to all but developers); changing keys, webhook endpoints and dealers and resetting sandbox
 * consumers is for developers and admins; managing people and credit policy is for admins; acting
 * on referrals, revealing applicants and opening their documents is for underwriters and admins.
 */
import type { PortalRole } from '../../db/schema.js';

export const ROLES = ['admin', 'developer', 'underwriter', 'viewer'] as const satisfies readonly PortalRole[];

export const PERMISSIONS = {
  'keys:read': ['admin', 'developer', 'underwriter', 'viewer'],
  'keys:write': ['admin', 'developer'],
  'webhooks:read': ['admin', 'developer', 'underwriter', 'viewer'],
  'webhooks:write': ['admin', 'developer'],
  'consumers:read': ['admin', 'developer', 'underwriter', 'viewer'],
  'consumers:reset': ['admin', 'developer'],
  'users:read': ['admin'],
  'users:write': ['admin'],
  'dealers:read': ['admin', 'developer', 'underwriter', 'viewer'],
  'dealers:write': ['admin', 'developer'],
  'decisions:read': ['admin', 'developer', 'underwriter', 'viewer'],
  'dashboard:read': ['admin', 'developer', 'underwriter', 'viewer'],
  // Credit policy: everyone reads it; only admins change how the tenant lends.
  'policy:read': ['admin', 'developer', 'underwriter', 'viewer'],
  'policy:write': ['admin'],
  // The underwriting workplace (referral queue, verification review): everyone reads the queue
  // masked; underwriters and admins act, see applicants in full and open uploaded documents.
  'referrals:read': ['admin', 'underwriter', 'viewer'],
  'referrals:act': ['admin', 'underwriter'],
  'pii:reveal': ['admin', 'underwriter'],
  'documents:read': ['admin', 'underwriter'],
  // Adverse-action notices: everyone reads what they say about the lender; admins set it. Making
  // one names the applicant, so it takes pii:reveal.
  'notices:read': ['admin', 'developer', 'underwriter', 'viewer'],
  'notices:write': ['admin'],
} as const satisfies Record<string, readonly PortalRole[]>;

export type Permission = keyof typeof PERMISSIONS;

export function can(role: PortalRole, permission: Permission): boolean {
  return (PERMISSIONS[permission] as readonly PortalRole[]).includes(role);
}

/** Every permission a role has (sent to the web app so it hides what the API would refuse). */
export function permissionsOf(role: PortalRole): Permission[] {
  return (Object.keys(PERMISSIONS) as Permission[]).filter((p) => can(role, p));
}
