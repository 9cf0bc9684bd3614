/** The portal's role table: what each role may do (docs/portal.md, Roles). */
import { describe, expect, it } from 'vitest';
import { can, PERMISSIONS, permissionsOf, ROLES } from '../../../src/modules/portal/permissions.js';

describe('portal permissions', () => {
  it('matches the documented roles table', () => {
    expect(permissionsOf('admin')).toEqual(Object.keys(PERMISSIONS));
    expect(permissionsOf('developer')).toEqual(['keys:read', 'keys:write', 'webhooks:read', 'webhooks:write', 'consumers:read', 'consumers:reset', 'dealers:read', 'dealers:write', 'decisions:read', 'dashboard:read', 'policy:read', 'notices:read']);
    expect(permissionsOf('underwriter')).toEqual(['keys:read', 'webhooks:read', 'consumers:read', 'dealers:read', 'decisions:read', 'dashboard:read', 'policy:read', 'referrals:read', 'referrals:act', 'pii:reveal', 'documents:read', 'notices:read']);
    expect(permissionsOf('viewer')).toEqual(['keys:read', 'webhooks:read', 'consumers:read', 'dealers:read', 'decisions:read', 'dashboard:read', 'policy:read', 'referrals:read', 'notices:read']);
  });

  it('only admins manage users, and every role can read', () => {
    for (const role of ROLES) {
      expect(can(role, 'users:write')).toBe(role === 'admin');
      expect(can(role, 'keys:read') && can(role, 'webhooks:read') && can(role, 'consumers:read')).toBe(true);
      expect(can(role, 'decisions:read') && can(role, 'dashboard:read')).toBe(true);
    }
    expect(can('viewer', 'keys:write')).toBe(false);
    // Changing how the tenant lends is for admins only; everyone may read the policy.
    for (const role of ROLES) expect([can(role, 'policy:read'), can(role, 'policy:write')]).toEqual([true, role === 'admin']);
    // The underwriting workplace: everyone but developers reads the queue; only underwriters and admins act or see PII and documents.
    for (const permission of ['referrals:act', 'pii:reveal', 'documents:read'] as const) {
      expect(ROLES.filter((role) => can(role, permission))).toEqual(['admin', 'underwriter']);
    }
    expect(ROLES.filter((role) => can(role, 'referrals:read'))).toEqual(['admin', 'underwriter', 'viewer']);
    // Adverse-action notices: everyone reads what they say about the lender; admins set it.
    for (const role of ROLES) expect([can(role, 'notices:read'), can(role, 'notices:write')]).toEqual([true, role === 'admin']);
  });
});
