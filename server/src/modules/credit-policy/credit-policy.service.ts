/**
 * Credit policy versions per tenant, environment and product: create (upload or structured edit),
 * validate, test against the sandbox, promote, list; and the documents every decision runs on.
 *
 * Versions. Each create stores a new, validated draft numbered one above the scope's last
 * (`policy_heads.last_version`, incremented under the head row's lock) and named
 * `<product>-policy-<environment>-v<n>`; the name is written into the document's
 * `policy.version`, so `engine_version` and the audit record carry it. Nothing is ever deleted or
 * edited: a change is a new version, and an old decision replays on exactly its own document.
 * Promote, in one transaction: lock the head row (incrementing its generation), retire the active
 * version, activate the chosen one (a draft, or a retired one to roll back), point the head at it.
 * A partial unique index allows one active version per scope even if that logic were bypassed.
 * With no active version a scope decides with the bundled default (bnpl-policy-2026.11.1).
 *
 * Caching (`documentsFor`). Decisions do not read policy rows. Each process keeps, per scope, the
 * compiled documents and the head's generation it compiled them for. A promote in this process
 * replaces its own entry at commit, so the very next decision here uses the new version. Other
 * processes re-read only the head row (one primary-key read), and only when their entry is older
 * than `freshnessMs` (default 1 s): they switch within `freshnessMs` of the promote's commit.
 * Compiled versions are kept by id (immutable), so a switch compiles each version once.
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, PolicyVersionsTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { PolicyDocumentProblem } from '../engine/index.js';
import type { SandboxTestRow } from './bnpl-sandbox-test.js';
import { POLICY_PRODUCTS, versionName, type PolicyProduct, type PolicyProductDocuments, type ProductPolicyDefinition } from './policy-products.js';

export interface PolicyScope {
  tenantId: string;
  environment: Environment;
}

/** How stale another process's view of a promote may be, at most (docs/engine.md). */
export const POLICY_FRESHNESS_MS = 1_000;
/** Compiled versions kept per process; old ones are compiled again if ever needed. */
const COMPILED_CACHE_SIZE = 200;

export interface CreditPolicyDeps {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  clock: Clock;
  random: Random;
  freshnessMs?: number;
}

/** A new version's content: exactly one of document, documentJson or tables. */
export interface DraftInput {
  document?: unknown;
  /** The JDM as text (an uploaded file): parse errors are reported as problems. */
  documentJson?: string;
  /** The structured view applied to a base version (default: the current one). */
  tables?: unknown;
  baseVersionId?: string | null;
  scorecardVersion?: string;
  note?: string | null;
}

export interface PreparedDraft {
  document: unknown | null;
  scorecardVersion: string;
  basedOn: string | null;
  problems: PolicyDocumentProblem[];
}

/** The version in force: a stored one, or the bundled default when the scope has none. */
export type CurrentPolicy =
  | { source: 'stored'; version: PolicyVersionsTable }
  | { source: 'bundled'; name: string; scorecardVersion: string; document: unknown };

interface CacheEntry {
  generation: number;
  activeVersionId: string | null;
  documents: unknown;
  checkedAt: number;
}

export class PolicyValidationError extends ApiError {
  constructor(readonly problems: PolicyDocumentProblem[]) {
    super('invalid_policy', `The policy has ${problems.length} problem${problems.length === 1 ? '' : 's'}: ${problems.map((p) => `${p.path} (${p.rule}): ${p.message}`).join('; ')}`);
  }
}

export function createCreditPolicyService(deps: CreditPolicyDeps) {
  const { db, readDb, clock, random } = deps;
  const freshnessMs = deps.freshnessMs ?? POLICY_FRESHNESS_MS;
  const cache = new Map<string, CacheEntry>();
  const refreshing = new Map<string, Promise<CacheEntry>>();
  const compiled = new Map<string, unknown>();

  const keyOf = (scope: PolicyScope, product: string) => `${scope.tenantId}\u0000${scope.environment}\u0000${product}`;
  const definition = <P extends PolicyProduct>(product: P) => POLICY_PRODUCTS[product] as unknown as ProductPolicyDefinition<PolicyProductDocuments[P]>;

  function compileRow<P extends PolicyProduct>(product: P, row: Pick<PolicyVersionsTable, 'id' | 'scorecard_version' | 'document_json'>): PolicyProductDocuments[P] {
    const found = compiled.get(row.id);
    if (found) return found as PolicyProductDocuments[P];
    const documents = definition(product).compile(row.scorecard_version, JSON.parse(row.document_json));
    if (compiled.size >= COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
    compiled.set(row.id, documents);
    return documents;
  }

  /** The documents deciding for a scope now (cached; see the opening comment). */
  async function documentsFor<P extends PolicyProduct>(scope: PolicyScope, product: P): Promise<PolicyProductDocuments[P]> {
    const key = keyOf(scope, product);
    const entry = cache.get(key);
    const now = clock.now().getTime();
    if (entry && now - entry.checkedAt < freshnessMs && now >= entry.checkedAt) return entry.documents as PolicyProductDocuments[P];
    let pending = refreshing.get(key);
    if (!pending) {
      pending = refresh(scope, product, entry, now).finally(() => refreshing.delete(key));
      refreshing.set(key, pending);
    }
    return (await pending).documents as PolicyProductDocuments[P];
  }

  async function refresh(scope: PolicyScope, product: PolicyProduct, entry: CacheEntry | undefined, now: number): Promise<CacheEntry> {
    const head = await readHead(readDb, scope, product);
    const generation = head?.generation ?? 0;
    const activeVersionId = head?.active_version_id ?? null;
    let next: CacheEntry;
    if (entry && entry.generation === generation && entry.activeVersionId === activeVersionId) {
      next = { ...entry, checkedAt: now };
    } else if (activeVersionId === null) {
      const def = definition(product);
      next = { generation, activeVersionId, documents: def.bundledDocuments({ scorecard: def.bundled.scorecardVersion, policy: def.bundled.policyVersion }), checkedAt: now };
    } else {
      const row = await readDb.selectFrom('policy_versions').select(['id', 'scorecard_version', 'document_json']).where('id', '=', activeVersionId).executeTakeFirstOrThrow();
      next = { generation, activeVersionId, documents: compileRow(product, row), checkedAt: now };
    }
    const current = cache.get(keyOf(scope, product));
    // A promote in this process may have installed a newer entry while this read was in flight.
    if (!current || current.generation <= next.generation) cache.set(keyOf(scope, product), next);
    return cache.get(keyOf(scope, product))!;
  }

  /** The documents a stored decision names (replay): bundled, or this scope's stored version. */
  async function documentsForVersions<P extends PolicyProduct>(scope: PolicyScope, product: P, versions: { scorecard: string; policy: string }): Promise<PolicyProductDocuments[P]> {
    const def = definition(product);
    if (def.isBundledPolicyVersion(versions.policy)) return def.bundledDocuments(versions);
    const row = await readDb
      .selectFrom('policy_versions')
      .select(['id', 'scorecard_version', 'document_json'])
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('product', '=', product)
      .where('name', '=', versions.policy)
      .executeTakeFirst();
    if (!row) throw new ApiError('not_found', `No policy version ${versions.policy} in this environment.`);
    return compileRow(product, { ...row, scorecard_version: versions.scorecard });
  }

  async function current(scope: PolicyScope, product: PolicyProduct): Promise<CurrentPolicy> {
    const row = await readDb.selectFrom('policy_versions').selectAll().where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment).where('product', '=', product).where('status', '=', 'active').executeTakeFirst();
    if (row) return { source: 'stored', version: row };
    const def = definition(product);
    return { source: 'bundled', name: def.bundled.policyVersion, scorecardVersion: def.bundled.scorecardVersion, document: def.bundledPolicyDocument(def.bundled.policyVersion) };
  }

  async function listVersions(scope: PolicyScope, product: PolicyProduct, options: { limit: number; offset: number }) {
    const q = readDb.selectFrom('policy_versions').where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment).where('product', '=', product);
    const [{ n }, rows] = await Promise.all([
      q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      q.selectAll().orderBy('version', 'desc').limit(options.limit).offset(options.offset).execute(),
    ]);
    return { total: Number(n), versions: rows };
  }

  async function getVersion(scope: PolicyScope, product: PolicyProduct, id: string, executor: Kysely<Database> = readDb): Promise<PolicyVersionsTable> {
    const row = await executor.selectFrom('policy_versions').selectAll().where('id', '=', id).executeTakeFirst();
    // Another tenant's, environment's or product's version is indistinguishable from none.
    if (!row || row.tenant_id !== scope.tenantId || row.environment !== scope.environment || row.product !== product) throw new ApiError('not_found', 'No such policy version in this environment.');
    return row;
  }

  /** A version to start from: the given one, else the one in force. */
  async function baseOf(scope: PolicyScope, product: PolicyProduct, id: string | null): Promise<{ name: string; scorecardVersion: string; document: unknown }> {
    if (id) {
      const row = await getVersion(scope, product, id);
      return { name: row.name, scorecardVersion: row.scorecard_version, document: JSON.parse(row.document_json) };
    }
    const c = await current(scope, product);
    if (c.source === 'stored') return { name: c.version.name, scorecardVersion: c.version.scorecard_version, document: JSON.parse(c.version.document_json) };
    return { name: c.name, scorecardVersion: c.scorecardVersion, document: c.document };
  }

  /** Resolve the input into a document and validate it (nothing is stored): the dry run and the first half of create. */
  async function prepare(scope: PolicyScope, product: PolicyProduct, input: DraftInput, name?: string): Promise<PreparedDraft> {
    const def = definition(product);
    const given = [input.document !== undefined, input.documentJson !== undefined, input.tables !== undefined].filter(Boolean).length;
    if (given !== 1) throw new ApiError('invalid_request', 'Send exactly one of document, document_json or tables.');
    let document: unknown;
    let basedOn: string | null = null;
    let scorecardVersion: string | undefined;
    if (input.documentJson !== undefined) {
      try {
        document = JSON.parse(input.documentJson) as unknown;
      } catch (error) {
        return { document: null, scorecardVersion: input.scorecardVersion ?? def.bundled.scorecardVersion, basedOn, problems: [{ path: '/document_json', rule: 'json_parse', message: `not valid JSON: ${(error as Error).message}` }] };
      }
    } else if (input.document !== undefined) {
      document = input.document;
    } else {
      const base = await baseOf(scope, product, input.baseVersionId ?? null);
      basedOn = base.name;
      scorecardVersion = base.scorecardVersion;
      const applied = def.applyTables(base.document, input.tables);
      if (!applied.document) return { document: null, scorecardVersion: input.scorecardVersion ?? scorecardVersion, basedOn, problems: applied.problems };
      document = applied.document;
    }
    const chosenScorecard = input.scorecardVersion ?? scorecardVersion ?? (await baseOf(scope, product, null)).scorecardVersion;
    const problems: PolicyDocumentProblem[] = [];
    if (!def.scorecardVersions().includes(chosenScorecard)) {
      problems.push({ path: '/scorecard_version', rule: 'scorecard_known', message: `scorecard ${chosenScorecard} is not one of ${def.scorecardVersions().join(', ')}` });
    }
    const identified = def.withIdentity(document, { version: name ?? versionName(product, scope.environment, 0), tenant: scope.tenantId, environment: scope.environment });
    problems.push(...(await def.validate(identified)));
    return { document: identified, scorecardVersion: chosenScorecard, basedOn, problems };
  }

  /** Store a new draft version; 422 invalid_policy listing every problem when it does not validate. */
  async function createDraft(scope: PolicyScope, product: PolicyProduct, input: DraftInput, userId: string): Promise<PolicyVersionsTable> {
    const prepared = await prepare(scope, product, input);
    if (prepared.problems.length > 0 || prepared.document === null) throw new PolicyValidationError(prepared.problems);
    const def = definition(product);
    const now = clock.now().getTime();
    return db.transaction().execute(async (trx) => {
      await ensureHead(trx, scope, product, now);
      await trx.updateTable('policy_heads').set((eb) => ({ last_version: eb('last_version', '+', 1), updated_at: now })).where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment).where('product', '=', product).execute();
      const head = (await readHead(trx, scope, product))!;
      const name = versionName(product, scope.environment, head.last_version);
      // Only the identity constants change: the document validated above is the one stored.
      const document = def.withIdentity(prepared.document, { version: name, tenant: scope.tenantId, environment: scope.environment });
      const row: PolicyVersionsTable = {
        id: random.uuid(),
        tenant_id: scope.tenantId,
        environment: scope.environment,
        product,
        version: head.last_version,
        name,
        document_json: JSON.stringify(document),
        scorecard_version: prepared.scorecardVersion,
        status: 'draft',
        note: input.note ?? null,
        based_on: prepared.basedOn,
        created_by: userId,
        created_at: now,
        promoted_at: null,
        promoted_by: null,
        retired_at: null,
      };
      await trx.insertInto('policy_versions').values(row).execute();
      return row;
    });
  }

  /** Decide the sandbox set with the version in force and with `id`; nothing is written. */
  async function testVersion(scope: PolicyScope, product: PolicyProduct, id: string): Promise<{ against: string; version: PolicyVersionsTable; rows: SandboxTestRow[] }> {
    const def = definition(product);
    const row = await getVersion(scope, product, id);
    const active = await documentsFor(scope, product);
    const rows = await def.sandboxTest(active, compileRow(product, row), clock.now());
    return { against: def.versionsOf(active).policy, version: row, rows };
  }

  /** Make `id` the active version (atomically retiring the previous one). */
  async function promote(scope: PolicyScope, product: PolicyProduct, id: string, userId: string): Promise<PolicyVersionsTable> {
    const def = definition(product);
    const candidate = await getVersion(scope, product, id);
    if (candidate.status === 'active') throw new ApiError('unprocessable_entity', `${candidate.name} is already the active version.`);
    // Validated when created; checked again in case the rules have tightened since.
    const problems = await def.validate(JSON.parse(candidate.document_json));
    if (problems.length > 0) throw new PolicyValidationError(problems);
    const now = clock.now().getTime();
    const promoted = await db.transaction().execute(async (trx) => {
      await ensureHead(trx, scope, product, now);
      // Taking the head row's lock first serialises concurrent promotes of one scope.
      await trx.updateTable('policy_heads').set((eb) => ({ generation: eb('generation', '+', 1), updated_at: now })).where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment).where('product', '=', product).execute();
      const row = await getVersion(scope, product, id, trx);
      if (row.status === 'active') throw new ApiError('unprocessable_entity', `${row.name} is already the active version.`);
      await trx.updateTable('policy_versions').set({ status: 'retired', retired_at: now }).where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment).where('product', '=', product).where('status', '=', 'active').execute();
      await trx.updateTable('policy_versions').set({ status: 'active', promoted_at: now, promoted_by: userId, retired_at: null }).where('id', '=', id).execute();
      await trx.updateTable('policy_heads').set({ active_version_id: id }).where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment).where('product', '=', product).execute();
      const head = (await readHead(trx, scope, product))!;
      return { row: { ...row, status: 'active' as const, promoted_at: now, promoted_by: userId, retired_at: null }, generation: head.generation };
    });
    // This process sees the promote at once; others within freshnessMs.
    const cached = cache.get(keyOf(scope, product));
    if (!cached || cached.generation < promoted.generation) cache.set(keyOf(scope, product), { generation: promoted.generation, activeVersionId: id, documents: compileRow(product, promoted.row), checkedAt: clock.now().getTime() });
    return promoted.row;
  }

  return { documentsFor, documentsForVersions, current, listVersions, getVersion, prepare, createDraft, testVersion, promote };
}

export type CreditPolicyService = ReturnType<typeof createCreditPolicyService>;

async function readHead(executor: Kysely<Database>, scope: PolicyScope, product: string) {
  return executor
    .selectFrom('policy_heads')
    .select(['generation', 'active_version_id', 'last_version'])
    .where('tenant_id', '=', scope.tenantId)
    .where('environment', '=', scope.environment)
    .where('product', '=', product)
    .executeTakeFirst();
}

async function ensureHead(trx: Kysely<Database>, scope: PolicyScope, product: string, now: number): Promise<void> {
  await trx
    .insertInto('policy_heads')
    .values({ tenant_id: scope.tenantId, environment: scope.environment, product, active_version_id: null, generation: 0, last_version: 0, updated_at: now })
    .onConflict((oc) => oc.columns(['tenant_id', 'environment', 'product']).doNothing())
    .execute();
}
