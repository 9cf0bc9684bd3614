/**
 * The composition root: builds every service once from the configuration and hands them to the
 * HTTP app, the workers and the CLI. Nothing else constructs services, so what depends on what is
 * visible in one place, and tests build the same graph with their own clock, ids and database.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { openStorage, type Storage } from '../db/database.js';
import { createTransactionRunner, eventLoopBusy, type TransactionRunner } from '../db/group-commit.js';
import { logCheckpoint } from '../db/wal-checkpointer.js';
import { cryptoRandom, systemClock, type Clock, type Random } from '../lib/clock.js';
import { createSecretBox, type SecretBox } from '../lib/crypto.js';
import { createLogger } from '../lib/logger.js';
import { createApiKeysService, SQLITE_MAX_AGE_MS, type ApiKeysService } from '../modules/api-keys/api-keys.service.js';
import { ApiKeyCache } from '../modules/api-keys/api-key-cache.js';
import { DecisionCache } from '../modules/decisions/decision-cache.js';
import { localInvalidationFeed, postgresInvalidationFeed, type PostgresFeedOptions } from '../modules/api-keys/api-key-invalidation.js';
import { createIdempotencyService, type IdempotencyService } from '../modules/idempotency/idempotency.service.js';
import { createLocalRateLimiter, createRedisRateLimiter, type RateLimiter } from '../modules/rate-limit/rate-limiter.js';
import { createTenantsService, type TenantsService } from '../modules/tenants/tenants.service.js';
import { createConsumersService, type ConsumersService } from '../modules/consumers/consumers.service.js';
import { createOutbox, type Outbox } from '../modules/events/outbox.js';
import { createEventsService, type EventsService } from '../modules/events/events.service.js';
import { createDecisionsService, type DecisionsService } from '../modules/decisions/decisions.service.js';
import { createCreditDataConnectors } from '../modules/credit-data/connectors.js';
import type { CreditDataConnector } from '../modules/credit-data/credit-data.types.js';
import type { ProductEngineDocuments } from '../modules/engine/index.js';
import { createDealersService, type DealersService } from '../modules/dealers/dealers.service.js';
import { createCreditPolicyService, type CreditPolicyService } from '../modules/credit-policy/credit-policy.service.js';
import { createLiveCodeSender, type CodeSender } from '../modules/kyc/code-senders.js';
import { createVerificationService, type VerificationService } from '../modules/kyc/verification.service.js';
import { createWebhookFanOut } from '../modules/webhooks/fan-out.js';
import { createWebhooksService, type WebhooksService } from '../modules/webhooks/webhooks.service.js';
import { createDeliveryWorker, type DeliveryWorker, type DeliveryWorkerOptions } from '../modules/webhooks/delivery-worker.js';
import { createAccountsService, type AccountsService } from '../modules/portal/accounts.service.js';
import { createReportingService, type ReportingService } from '../modules/reporting/reporting.service.js';
import { createUnderwritingService, type UnderwritingService } from '../modules/decisions/underwriting.service.js';
import { createNoticesService, type NoticesService } from '../modules/notices/notices.service.js';
import { createDocumentReviewService, type DocumentReviewService } from '../modules/kyc/document-review.service.js';

export interface AppContext {
  config: Readonly<Config>;
  storage: Storage;
  clock: Clock;
  random: Random;
  logger: Logger;
  secretBox: SecretBox;
  rateLimiter: RateLimiter;
  apiKeys: ApiKeysService;
  /** PostgreSQL: the poll cache (ADR 0050); null on SQLite or with DECISION_CACHE_MB=0. */
  decisionCache: DecisionCache | null;
  tenants: TenantsService;
  idempotency: IdempotencyService;
  /** The group commit every state change runs through (db/group-commit.ts); its `stats()` for tests and the bench. */
  transactions: TransactionRunner;
  consumers: ConsumersService;
  outbox: Outbox;
  decisions: DecisionsService;
  /** Auto-loan tenants' dealer networks (modules/dealers). */
  dealers: DealersService;
  verification: VerificationService;
  webhooks: WebhooksService;
  /** Sends due webhook deliveries; started by the worker role (workers/workers.ts). */
  webhookDelivery: DeliveryWorker;
  /** Lender portal users, invitations and sessions (modules/portal). */
  accounts: AccountsService;
  /** The portal's decision explorer and dashboard: read-only (modules/reporting). */
  reporting: ReportingService;
  /** Credit policy versions per tenant, environment and product; the documents decisions run on. */
  creditPolicy: CreditPolicyService;
  /** The referral queue's actions on decisions (modules/decisions/underwriting.service.ts). */
  underwriting: UnderwritingService;
  /** Verification review: failed hard-tier verifications and uploaded documents (modules/kyc). */
  documentReview: DocumentReviewService;
  /** The event history read API (GET /v1/events; modules/events). */
  events: EventsService;
  /** Adverse-action notices and the tenant's notice settings (modules/notices). */
  notices: NoticesService;
  close(): Promise<void>;
}

export interface ContextOverrides {
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  storage?: Storage;
  /** Replace a credit-data connector (tests point live at a fake gateway with its own CA). */
  creditData?: Partial<Record<'sandbox' | 'live', CreditDataConnector>>;
  /** Replace how live one-time codes are sent. */
  codeSender?: CodeSender;
  /** Webhook delivery knobs (tests: a receiver's CA, shorter time-out and lease). */
  webhookDelivery?: Partial<DeliveryWorkerOptions>;
  /** The API-key cache's PostgreSQL listener (tests: reconnect delay, barrier time-out). */
  apiKeyInvalidation?: Partial<Pick<PostgresFeedOptions, 'barrierTimeoutMs' | 'reconnectDelayMs'>>;
}

export function createContext(config: Readonly<Config>, overrides: ContextOverrides = {}): AppContext {
  const clock = overrides.clock ?? systemClock;
  const random = overrides.random ?? cryptoRandom;
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const storage =
    overrides.storage ??
    openStorage({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      writerThread: config.sqliteWriterThread !== 'off',
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      onPoolError: (err) => logger.warn({ err: err.message }, 'database connection lost; the pool will reconnect'),
      onSilentConnection: (silentMs) => logger.warn({ silentMs }, 'database connection gave no answer; ended it, the pool will reconnect'),
      onCheckpointError: (err) => logger.warn({ err: err.message }, 'background WAL checkpoint failed; the next one retries'),
      checkpoints: {
        onCheckpoint: (r) => logCheckpoint(logger, r),
      },
    });
  const secretBox = createSecretBox(config.dataEncryptionKey);
  const rateLimiter = config.redisUrl
    ? createRedisRateLimiter({ url: config.redisUrl, clock, logger })
    : createLocalRateLimiter(clock);
  // Cached key lookups; on PostgreSQL kept current across processes by LISTEN/NOTIFY (api-keys.service.ts).
  const cacheable = config.apiKeyCacheSize > 0 && (storage.dialect === 'sqlite' || config.databaseUrl !== null);
  const apiKeyCache = cacheable ? new ApiKeyCache(config.apiKeyCacheSize, storage.dialect === 'sqlite' ? SQLITE_MAX_AGE_MS : Infinity) : null;
  const listening = apiKeyCache !== null && storage.dialect === 'postgres' && config.databaseUrl !== null;
  // PostgreSQL: poll answers cached per process, kept current by the same listener (ADR 0050).
  const decisionCache = listening && config.decisionCacheMb > 0 ? new DecisionCache(config.decisionCacheMb * 1024 * 1024) : null;
  const apiKeyFeed =
    listening
      ? postgresInvalidationFeed({ databaseUrl: config.databaseUrl, cache: apiKeyCache, decisions: decisionCache, logger, ...overrides.apiKeyInvalidation })
      : localInvalidationFeed();
  const apiKeys = createApiKeysService({ db: storage.db, readDb: storage.readDb, clock, random, cache: apiKeyCache, feed: apiKeyFeed });
  const consumers = createConsumersService({ db: storage.db, readDb: storage.readDb, clock, random, secretBox, dialect: storage.dialect });
  const tenants = createTenantsService({ db: storage.db, clock, random, apiKeys, consumers });
  // When SQLite work goes to a thread (the create's writes: ADR 0030; the delivery worker's cycles:
  // ADR 0048): one rule for both, so both read the same measure of the event loop.
  const offload = config.sqliteWriterThread === 'always' ? () => true : eventLoopBusy();
  const transactions = createTransactionRunner(storage, { offload });
  const idempotency = createIdempotencyService({ db: storage.db, readDb: storage.readDb, transactions, clock, secretBox, dialect: storage.dialect });
  // Every event appended also becomes its webhook deliveries, in the same transaction. Plans of
  // appends are made only when the runner would use them (SQLite's writer thread, saturated).
  const outbox = createOutbox({
    db: storage.db, dialect: storage.dialect, clock, random, fanOut: createWebhookFanOut({ db: storage.db, readDb: storage.readDb, random, dialect: storage.dialect }), plansWanted: transactions.plansWanted,
  });
  const webhooks = createWebhooksService({
    db: storage.db, readDb: storage.readDb, dialect: storage.dialect, clock, random, secretBox, outbox, allowPrivateNetworks: config.webhookAllowPrivateNetworks,
  });
  const webhookDelivery = createDeliveryWorker(
    {
      db: storage.db, dialect: storage.dialect, walSync: storage.walSync, pipelined: storage.pipelined, offLoopWriter: storage.offLoopWriter, offload, clock, random, secretBox, logger,
    },
    {
      allowPrivateNetworks: config.webhookAllowPrivateNetworks,
      concurrency: config.webhookDelivery.concurrency,
      perEndpointConcurrency: config.webhookDelivery.perEndpointConcurrency,
      ...(config.webhookRetryDelaysMs ? { schedule: { delaysMs: config.webhookRetryDelaysMs } } : {}),
      ...overrides.webhookDelivery,
    },
  );
  const creditData = createCreditDataConnectors(config, { clock, random });
  // Each tenant, environment and product (bnpl, auto_loan) decides with its active policy version,
  // else the product's bundled default (modules/credit-policy/policy-products.ts).
  const creditPolicy = createCreditPolicyService({ db: storage.db, readDb: storage.readDb, clock, random });
  const dealers = createDealersService({ db: storage.db, readDb: storage.readDb, clock, random, outbox });
  const decisions = createDecisionsService({
    config, db: storage.db, readDb: storage.readDb, clock, random, secretBox, consumers, outbox,
    creditData: { ...creditData.byEnvironment, ...overrides.creditData },
    documentsFor: async <P extends keyof ProductEngineDocuments = 'bnpl'>(scope: { tenantId: string; environment: 'sandbox' | 'live' }, product?: P) =>
      (await creditPolicy.documentsFor(scope, product ?? 'bnpl')) as ProductEngineDocuments[P],
    findActiveDealer: (scope, dealerId) => dealers.findActiveDealer(scope, dealerId),
    // PostgreSQL: the poll's read goes out on the API-key listener, as the next freshness barrier,
    // as many batches at once as the listener sends statements (ADR 0052).
    readByIds: (table, columns, options) =>
      storage.readByIds(table, columns, { ...options, via: apiKeyFeed.readInBarrier?.bind(apiKeyFeed), maxBatchesInFlight: apiKeyFeed.statementsOut ?? 1 }),
    pollCache: decisionCache ? { cache: decisionCache, ready: () => apiKeyFeed.ready() } : null,
    merchantDefaultsFor: async (tenantId) => {
      const tenant = await tenants.getTenant(tenantId);
      return {
        merchantName: tenant?.settings.default_merchant_name ?? tenant?.name ?? 'Merchant',
        merchantCategory: tenant?.settings.default_merchant_category ?? 'general',
      };
    },
  });

  const underwriting = createUnderwritingService({ config, db: storage.db, readDb: storage.readDb, clock, random, secretBox, consumers, outbox, decisions });
  const documentReview = createDocumentReviewService({ db: storage.db, readDb: storage.readDb, clock, secretBox, underwriting });

  const codeSender = overrides.codeSender ?? createLiveCodeSender(config);
  const verification = createVerificationService({
    db: storage.db, clock, random, secretBox, dataKey: config.dataEncryptionKey, logger, decisions, consumers, codeSender, underwriting, reviews: documentReview,
  });

  const accounts = createAccountsService({
    db: storage.db, readDb: storage.readDb, clock, random, tenants, apiKeys, rateLimiter, dataEncryptionKey: config.dataEncryptionKey, dialect: storage.dialect,
  });

  const reporting = createReportingService({ readDb: storage.readDb, analyticsDb: storage.analyticsDb, decisions, webhooks });
  const events = createEventsService({ readDb: storage.readDb, clock });
  const notices = createNoticesService({ db: storage.db, readDb: storage.readDb, clock, reporting, consumers, underwriting });

  return {
    config, storage, clock, random, logger, secretBox, rateLimiter, apiKeys, decisionCache, tenants, idempotency, transactions, consumers, outbox, decisions, verification, webhooks, webhookDelivery,
    accounts,
    dealers,
    reporting,
    creditPolicy,
    underwriting,
    documentReview,
    events,
    notices,
    async close() {
      await webhookDelivery.stop();
      codeSender.close();
      creditData.close();
      await rateLimiter.close();
      await apiKeys.close();
      await storage.close();
    },
  };
}

