/**
 * Which credit-data source each environment uses. Sandbox: always the synthetic files (sandbox
 * never touches live data). Live: the lender's credit-data gateway when CREDIT_GATEWAY_URL is set;
 * without one, every live pull is "unavailable", which the engine turns into a referral with AA-25
 * (and `score.errored`): a live decision is never made on invented data.
 */
import type { Config, Environment } from '../../config/config.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { CreditDataConnector } from './credit-data.types.js';
import { createGatewayConnector } from './gateway-connector.js';
import { createSandboxConnector } from './sandbox-connector.js';

const notConfigured: CreditDataConnector = {
  name: 'none',
  fetchCreditFile: async () => ({ status: 'unavailable', reason: 'error', detail: 'no credit-data gateway is configured (CREDIT_GATEWAY_URL)', latencyMs: 0 }),
};

export function createCreditDataConnectors(config: Readonly<Config>, deps: { clock: Clock; random: Random }) {
  const gateway = config.creditGateway
    ? createGatewayConnector({ baseUrl: config.creditGateway.url, token: config.creditGateway.token, timeoutMs: config.creditGateway.timeoutMs, clock: deps.clock, random: deps.random })
    : null;
  const byEnvironment: Record<Environment, CreditDataConnector> = { sandbox: createSandboxConnector(), live: gateway ?? notConfigured };
  return { byEnvironment, close: () => gateway?.close() };
}
