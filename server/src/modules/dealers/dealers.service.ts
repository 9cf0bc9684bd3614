/**
 * Dealers: the dealer network of an auto-loan tenant, per environment. Added, edited and
 * soft-disabled by people in the portal (never through /v1); the decisions service asks only
 * `findActiveDealer` when an indirect application names one.
 *
 * Lifecycle: add -> active (`dealer.added`); disable -> disabled (`dealer.removed`); enable ->
 * active again (`dealer.added` again). Disabling a disabled dealer (or enabling an active one)
 * changes nothing and emits nothing. Every change writes its event through the outbox in the same
 * transaction, with an optimistic check on the status read, so two concurrent clicks emit one event.
 * An edit (name, license number, state) names the `version` it loaded and is 409
 * `dealer_version_conflict` if someone else edited the dealer since; disabling and enabling change
 * no field the edit form shows and leave the version alone (migration 0024).
 * Dealers are never deleted: decisions keep naming them. Another tenant's or environment's dealer
 * is "not found".
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, DealersTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { editVersionMessage } from '../../http/errors/messages.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { NewEvent, Outbox } from '../events/outbox.js';

export interface DealerScope {
  tenantId: string;
  environment: Environment;
}

export interface Dealer {
  id: string;
  environment: Environment;
  name: string;
  licenseNumber: string | null;
  state: string | null;
  status: 'active' | 'disabled';
  createdAt: Date;
  updatedAt: Date;
  disabledAt: Date | null;
  /** Counts the edits (migration 0024): an edit sends the one it loaded. */
  version: number;
}

export interface DealerInput {
  name: string;
  licenseNumber?: string | null;
  state?: string | null;
}

export function createDealersService(deps: { db: Kysely<Database>; readDb: Kysely<Database>; clock: Clock; random: Random; outbox: Outbox }) {
  const { db, clock } = deps;

  async function listDealers(scope: DealerScope): Promise<Dealer[]> {
    const rows = await deps.readDb
      .selectFrom('dealers')
      .selectAll()
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    return rows.map(toDealer);
  }

  async function findRow(conn: Kysely<Database>, scope: DealerScope, id: string): Promise<DealersTable | undefined> {
    const row = await conn.selectFrom('dealers').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst();
    return row && row.tenant_id === scope.tenantId && row.environment === scope.environment ? row : undefined;
  }

  async function getDealer(scope: DealerScope, id: string): Promise<Dealer> {
    const row = await findRow(deps.readDb, scope, id);
    if (!row) throw notFound();
    return toDealer(row);
  }

  /** The dealer an indirect application names, if it exists here and is active; else null (422 for the caller). */
  async function findActiveDealer(scope: DealerScope, id: string): Promise<Dealer | null> {
    const row = await findRow(deps.readDb, scope, id);
    return row && row.status === 'active' ? toDealer(row) : null;
  }

  async function addDealer(scope: DealerScope, input: DealerInput): Promise<Dealer> {
    const now = clock.now().getTime();
    const row: DealersTable = {
      id: deps.random.uuid(),
      tenant_id: scope.tenantId,
      environment: scope.environment,
      name: cleanName(input.name),
      license_number: cleanOptional(input.licenseNumber),
      state: input.state ?? null,
      status: 'active',
      created_at: now,
      updated_at: now,
      disabled_at: null,
      version: 1,
      updated_by: null,
      edited_at: null,
    };
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('dealers').values(row).execute();
      await deps.outbox.append(trx, scope, [dealerEvent('dealer.added', row)]);
    });
    return toDealer(row);
  }

  /**
   * Changes the fields given, if the dealer is still at `expectedVersion` (the version the editor
   * loaded); else 409 `dealer_version_conflict` and nothing is written. Every accepted edit bumps
   * the version.
   */
  async function updateDealer(scope: DealerScope, id: string, patch: DealerInput | Partial<DealerInput>, expectedVersion: number, editorId: string | null = null): Promise<Dealer> {
    const now = clock.now().getTime();
    const changes: Partial<DealersTable> = { updated_at: now, version: expectedVersion + 1, updated_by: editorId, edited_at: now };
    if (patch.name !== undefined) changes.name = cleanName(patch.name);
    if (patch.licenseNumber !== undefined) changes.license_number = cleanOptional(patch.licenseNumber);
    if (patch.state !== undefined) changes.state = patch.state;
    return db.transaction().execute(async (trx) => {
      // One conditional statement, not a read and then a write: of two edits from the same version
      // the second finds no row at that version, so both cannot win. It returns the row as written;
      // only an edit that matched nothing reads, to tell "not here" from "moved on".
      const updated = await trx
        .updateTable('dealers')
        .set(changes)
        .where('id', '=', id.toLowerCase())
        .where('tenant_id', '=', scope.tenantId)
        .where('environment', '=', scope.environment)
        .where('version', '=', expectedVersion)
        .returningAll()
        .executeTakeFirst();
      if (updated) return toDealer(updated);
      const row = await findRow(trx, scope, id);
      if (!row) throw notFound();
      const editor = row.updated_by === null ? undefined : await trx.selectFrom('users').select('name').where('id', '=', row.updated_by).executeTakeFirst();
      throw versionConflict(row.version, expectedVersion, editor?.name ?? null, row.edited_at);
    });
  }

  /** Soft-disable (`dealer.removed`), or re-enable (`dealer.added`); a no-op when already so. */
  async function setStatus(scope: DealerScope, id: string, status: 'active' | 'disabled'): Promise<Dealer> {
    return db.transaction().execute(async (trx) => {
      const row = await findRow(trx, scope, id);
      if (!row) throw notFound();
      if (row.status === status) return toDealer(row);
      const now = clock.now().getTime();
      const changes = { status, updated_at: now, disabled_at: status === 'disabled' ? now : null };
      const updated = await trx.updateTable('dealers').set(changes).where('id', '=', row.id).where('status', '=', row.status).executeTakeFirst();
      // Someone else changed it between the read and the write: theirs emitted the event.
      if (Number(updated.numUpdatedRows) === 0) return toDealer((await findRow(trx, scope, id))!);
      const next = { ...row, ...changes };
      await deps.outbox.append(trx, scope, [dealerEvent(status === 'active' ? 'dealer.added' : 'dealer.removed', next)]);
      return toDealer(next);
    });
  }

  return {
    listDealers,
    getDealer,
    findActiveDealer,
    addDealer,
    updateDealer,
    disableDealer: (scope: DealerScope, id: string) => setStatus(scope, id, 'disabled'),
    enableDealer: (scope: DealerScope, id: string) => setStatus(scope, id, 'active'),
  };
}

export type DealersService = ReturnType<typeof createDealersService>;

function notFound(): ApiError {
  return new ApiError('not_found', 'No dealer with this id exists in this environment.');
}

/** The 409 of an edit that matched no row although the dealer is there, naming who edited it last and when (migrations 0025, 0027). */
function versionConflict(version: number, expectedVersion: number, editor: string | null, editedAt: number | null): ApiError {
  return new ApiError('dealer_version_conflict', editVersionMessage('This dealer', 'its current details', version, expectedVersion, editor, editedAt));
}

function cleanName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw new ApiError('invalid_request', 'name must be 1 to 200 characters (not only spaces).');
  return trimmed;
}

function cleanOptional(value: string | null | undefined): string | null {
  const trimmed = value?.trim() ?? '';
  return trimmed.length === 0 ? null : trimmed;
}

/** docs/webhooks.md, dealer.added / dealer.removed: the business name is not PII. */
function dealerEvent(type: 'dealer.added' | 'dealer.removed', row: DealersTable): NewEvent {
  return { type, subjectId: row.id, data: { dealer_id: row.id, dealer_name: row.name, status: row.status } };
}

function toDealer(row: DealersTable): Dealer {
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    licenseNumber: row.license_number,
    state: row.state,
    status: row.status,
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
    disabledAt: row.disabled_at === null ? null : new Date(Number(row.disabled_at)),
    version: row.version,
  };
}
