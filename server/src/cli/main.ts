#!/usr/bin/env node
/**
 * `cds`, the operator command line (decisions.md section 12). Run from the repository root as
 * `npm run cds -- <command>`. Commands that create something accept `--json` and then print exactly
 * one JSON object on standard output (logs go to standard error, so stdout stays parseable).
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, loadListenEnvironment } from '../config/config.js';
import { UnknownSchemaError } from '../db/database.js';
import { serveCommand } from './serve.command.js';
import { migrateCommand } from './migrate.command.js';
import { tenantsCreateCommand } from './tenants.command.js';
import { WebhooksCommandError, webhooksCreateCommand } from './webhooks.command.js';
import { ListenCommandError, listenCommand } from './listen.command.js';
import { UsersCommandError, usersResetPasswordCommand } from './users.command.js';

const USAGE = `Usage: cds <command> [options]

Commands:
  serve [--role api|worker|all]     Run the API, hosted pages and workers (default role: all)
  migrate                           Bring the database schema up to date
  tenants create --name NAME [--json]
                                    Create a tenant with its sandbox (three seeded consumers) and
                                    one sandbox and one live API key
  webhooks create --tenant ID --env sandbox|live --url URL [--events TYPE,TYPE|*]
                  [--description TEXT] [--json]
                                    Register a webhook endpoint (all events by default); prints
                                    its id and signing secret (shown once)
  users reset-password --email EMAIL [--json]
                                    A one-time link (24 h) for a portal user to set a new
                                    password, for a team whose admins are all locked out
  listen --api-key svc_test_... --forward-to http://localhost:PORT/PATH
         [--api-base URL] [--events TYPE,TYPE] [--secret whsec_...]
         [--since UNIX_SECONDS|ISO_TIME] [--interval-ms MS] [--json]
                                    Forward new sandbox events to a local receiver, signed
                                    with a secret printed at start (env: CDS_API_KEY,
                                    CDS_API_BASE; default API http://127.0.0.1:3000)

Configuration comes from environment variables only; see docs/configuration.md.
`;

export class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  // Arguments first: a typo in the command is a usage error whatever the environment holds.
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { role: { type: 'string', default: 'all' } }, strict: true });
      if (!['api', 'worker', 'all'].includes(values.role!)) throw new UsageError('--role must be api, worker or all');
      return serveCommand(loadConfig(), values.role as 'api' | 'worker' | 'all');
    }
    case 'migrate':
      parseArgs({ args: rest, options: {}, strict: true });
      return migrateCommand(loadConfig());
    case 'tenants': {
      const [sub, ...args] = rest;
      if (sub !== 'create') throw new UsageError('tenants: the only subcommand is "create"');
      const { values } = parseArgs({ args, options: { name: { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true });
      if (!values.name) throw new UsageError('tenants create needs --name NAME');
      if (values.name.trim().length === 0 || values.name.length > 200) throw new UsageError('--name must be 1 to 200 characters');
      return tenantsCreateCommand(loadConfig(), { name: values.name, json: values.json ?? false });
    }
    case 'webhooks': {
      const [sub, ...args] = rest;
      if (sub !== 'create') throw new UsageError('webhooks: the only subcommand is "create"');
      const { values } = parseArgs({
        args,
        options: {
          tenant: { type: 'string' }, env: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' }, description: { type: 'string' },
          json: { type: 'boolean', default: false },
        },
        strict: true,
      });
      if (!values.tenant || !values.env || !values.url) throw new UsageError('webhooks create needs --tenant ID --env sandbox|live --url URL');
      if (values.env !== 'sandbox' && values.env !== 'live') throw new UsageError('--env must be sandbox or live');
      return webhooksCreateCommand(loadConfig(), {
        tenant: values.tenant, env: values.env, url: values.url, events: values.events, description: values.description, json: values.json ?? false,
      });
    }
    case 'users': {
      const [sub, ...args] = rest;
      if (sub !== 'reset-password') throw new UsageError('users: the only subcommand is "reset-password"');
      const { values } = parseArgs({ args, options: { email: { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true });
      if (!values.email || values.email.trim().length === 0) throw new UsageError('users reset-password needs --email EMAIL');
      return usersResetPasswordCommand(loadConfig(), { email: values.email, json: values.json ?? false });
    }
    case 'listen': {
      const { values } = parseArgs({
        args: rest,
        options: {
          'api-key': { type: 'string' }, 'forward-to': { type: 'string' }, 'api-base': { type: 'string' }, events: { type: 'string' },
          secret: { type: 'string' }, since: { type: 'string' }, 'interval-ms': { type: 'string', default: '2000' }, json: { type: 'boolean', default: false },
        },
        strict: true,
      });
      const fromEnv = loadListenEnvironment();
      const apiKey = values['api-key'] ?? fromEnv.apiKey;
      if (!apiKey) throw new UsageError('listen needs --api-key svc_test_... (or CDS_API_KEY)');
      if (!values['forward-to']) throw new UsageError('listen needs --forward-to http://localhost:PORT/PATH');
      if (!/^\d+$/.test(values['interval-ms']!)) throw new UsageError('--interval-ms must be a whole number of milliseconds');
      let since: number | undefined;
      if (values.since !== undefined) {
        since = /^\d+$/.test(values.since) ? Number(values.since) : Math.floor(Date.parse(values.since) / 1000);
        if (!Number.isFinite(since)) throw new UsageError('--since must be unix seconds or an ISO 8601 time such as 2026-01-28T10:00:00Z');
      }
      // Ctrl-C / SIGTERM end the loop; the command then returns 0.
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      process.once('SIGTERM', () => stop.abort());
      return listenCommand(
        {
          apiKey,
          forwardTo: values['forward-to'],
          apiBase: values['api-base'] ?? fromEnv.apiBase ?? 'http://127.0.0.1:3000',
          events: values.events ? values.events.split(',').map((t) => t.trim()).filter(Boolean) : [],
          json: values.json ?? false,
          ...(values.secret !== undefined ? { secret: values.secret } : {}),
          ...(since !== undefined ? { since } : {}),
          intervalMs: Number(values['interval-ms']),
        },
        { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`), signal: stop.signal },
      );
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve keeps running until a signal; the others exit when done.
    if (code !== -1) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = 78; // EX_CONFIG
    } else if (err instanceof UsageError || (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`cds: ${err.message}\n\n${USAGE}`);
      process.exitCode = 64; // EX_USAGE
    } else if (err instanceof UnknownSchemaError) {
      // Not a bug of this process: the database was migrated by a build that is not a newer release of this one.
      process.stderr.write(`cds: ${err.message}\n`);
      process.exitCode = 1;
    } else if (err instanceof WebhooksCommandError || err instanceof ListenCommandError || err instanceof UsersCommandError) {
      process.stderr.write(`cds: ${err.message}\n`);
      process.exitCode = 65; // EX_DATAERR: the values given were refused
    } else {
      process.stderr.write(`cds: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
