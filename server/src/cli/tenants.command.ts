import type { Config } from '../config/config.js';
import { createContext } from '../app/context.js';
import { prepareDatabase } from '../app/data-key-check.js';
import { createLogger } from '../lib/logger.js';

export async function tenantsCreateCommand(config: Readonly<Config>, options: { name: string; json: boolean }): Promise<number> {
  const ctx = createContext(config, { logger: createLogger(options.json ? 'silent' : 'warn') });
  try {
    await prepareDatabase(ctx.storage.db, config, ctx.clock.now().getTime());
    const t = await ctx.tenants.createTenant({ name: options.name });
    if (options.json) {
      process.stdout.write(
        JSON.stringify({
          tenant_id: t.tenantId,
          sandbox: { api_key: t.sandbox.apiKey, consumers: t.sandbox.consumers.map((c) => ({ consumer_id: c.consumerId, tier: c.tier })) },
          live: { api_key: t.live.apiKey },
        }) + '\n',
      );
    } else {
      const lines = [
        `Tenant "${t.name}" created: ${t.tenantId}`,
        '',
        'API keys (shown once; store them now):',
        `  sandbox  ${t.sandbox.apiKey}`,
        `  live     ${t.live.apiKey}`,
        '',
        'Seeded sandbox consumers:',
        ...t.sandbox.consumers.map((c) => `  ${c.tier.padEnd(9)}${c.consumerId}`),
      ];
      process.stdout.write(lines.join('\n') + '\n');
    }
    return 0;
  } finally {
    await ctx.close();
  }
}
