/**
 * `cds users reset-password --email EMAIL [--json]`: a one-time link for a portal user to set a new
 * password, made by the operator. For the team whose every admin is locked out (an admin's own way
 * is Settings -> Users -> Reset password; ADR 0045). The link is the same as an admin's: 24 hours,
 * works once, replaces the user's previous link; the user's sessions end when it is used.
 */
import type { Config } from '../config/config.js';
import { createContext } from '../app/context.js';
import { prepareDatabase } from '../app/data-key-check.js';
import { createLogger } from '../lib/logger.js';
import { passwordResetUrl } from '../modules/portal/accounts.service.js';

export class UsersCommandError extends Error {}

export async function usersResetPasswordCommand(config: Readonly<Config>, options: { email: string; json: boolean }): Promise<number> {
  const ctx = createContext(config, { logger: createLogger(options.json ? 'silent' : 'warn') });
  try {
    await prepareDatabase(ctx.storage.db, config, ctx.clock.now().getTime());
    const user = await ctx.accounts.findUserByEmail(options.email);
    // The address is not repeated: operators' terminals and job logs are logs too (no PII in them).
    if (!user) throw new UsersCommandError('no active portal user has the email address given to --email');
    const { token, expiresAt } = await ctx.accounts.createPasswordReset(null, user.tenantId, user.id);
    const url = passwordResetUrl(config.publicBaseUrl, token);
    if (options.json) {
      // Ids, not the address: this output lands in terminals and job logs.
      process.stdout.write(JSON.stringify({ user_id: user.id, tenant_id: user.tenantId, role: user.role, reset_url: url, expires_at: expiresAt.toISOString() }) + '\n');
    } else {
      process.stdout.write(
        [
          `Password reset link for user ${user.id} (${user.role}, tenant ${user.tenantId}):`,
          `  ${url}`,
          '',
          `Works once, until ${expiresAt.toISOString()}; hand it to the person only. Their sessions end when it is used.`,
        ].join('\n') + '\n',
      );
    }
    return 0;
  } finally {
    await ctx.close();
  }
}
