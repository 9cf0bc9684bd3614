/**
 * `cds webhooks create --tenant ID --env sandbox|live --url URL [--events TYPE,TYPE|*]
 * [--description TEXT] [--json]` (decisions.md section 12): registers an endpoint through the same
 * service the portal uses and prints its id and signing secret, which is shown this once.
 */
import type { Config, Environment } from '../config/config.js';
import { createContext } from '../app/context.js';
import { prepareDatabase } from '../app/data-key-check.js';
import { ApiError } from '../http/errors/error-registry.js';
import { createLogger } from '../lib/logger.js';

export class WebhooksCommandError extends Error {}

export interface WebhooksCreateOptions {
  tenant: string;
  env: string;
  url: string;
  events: string | undefined;
  description: string | undefined;
  json: boolean;
}

export async function webhooksCreateCommand(config: Readonly<Config>, options: WebhooksCreateOptions): Promise<number> {
  if (options.env !== 'sandbox' && options.env !== 'live') throw new WebhooksCommandError('--env must be sandbox or live');
  const environment: Environment = options.env;
  const events = options.events === undefined || options.events.trim() === '*' ? '*' : options.events.split(',');
  const ctx = createContext(config, { logger: createLogger(options.json ? 'silent' : 'warn') });
  try {
    await prepareDatabase(ctx.storage.db, config, ctx.clock.now().getTime());
    const tenant = await ctx.tenants.getTenant(options.tenant);
    if (!tenant) throw new WebhooksCommandError(`no tenant with id "${options.tenant}"`);
    const { endpoint, secret } = await ctx.webhooks
      .createEndpoint({ tenantId: tenant.id, environment }, { url: options.url, events, description: options.description ?? null })
      .catch((err: unknown) => {
        // Validation messages are written for people: pass them on as they are.
        if (err instanceof ApiError) throw new WebhooksCommandError(err.message);
        throw err;
      });
    if (options.json) {
      process.stdout.write(JSON.stringify({ id: endpoint.id, secret }) + '\n');
    } else {
      process.stdout.write(
        [
          `Webhook endpoint created: ${endpoint.id}`,
          `  tenant       ${tenant.id} (${environment})`,
          `  url          ${endpoint.url}`,
          `  events       ${endpoint.events.join(', ')}`,
          '',
          'Signing secret (shown once; store it now):',
          `  ${secret}`,
        ].join('\n') + '\n',
      );
    }
    return 0;
  } finally {
    await ctx.close();
  }
}
