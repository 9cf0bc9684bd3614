/**
 * Adverse-action notices (docs/portal.md, "Adverse-action notices"; ADR 0047): the tenant's notice
 * settings, and one decision's notice built from them (adverse-action-notice.ts).
 *
 * A notice names the applicant and their address, so making one is a reveal of personal data and
 * is recorded like the referral queue's (an `underwriting_actions` row of kind `pii_revealed`,
 * purpose `adverse_action_notice`), in the decision's history, with who and when.
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, DecisionsTable, NoticeSettingsTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import type { Clock } from '../../lib/clock.js';
import type { ConsumersService } from '../consumers/consumers.service.js';
import type { Actor, UnderwritingService } from '../decisions/underwriting.service.js';
import type { ReportingService } from '../reporting/reporting.service.js';
import { buildAdverseActionNotice, type AdverseActionNotice, type NoticeApplicant, type NoticeSettings } from './adverse-action-notice.js';

/** The notice as `/v1` returns it: without the applicant. */
export type ApiAdverseActionNotice = Omit<AdverseActionNotice, 'applicant'>;

/** Longest values accepted, in characters (a name, a multi-line address, a telephone number). */
export const NOTICE_SETTING_LIMITS = { name: 200, address: 500, phone: 50 } as const;

export interface NoticeSettingsView extends NoticeSettings {
  version: number;
  updated_at: Date;
  updated_by: string | null;
}

export function createNoticesService(deps: {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  clock: Clock;
  reporting: ReportingService;
  consumers: ConsumersService;
  underwriting: UnderwritingService;
}) {
  async function getSettings(tenantId: string): Promise<NoticeSettingsView | null> {
    const row = await deps.readDb.selectFrom('notice_settings').selectAll().where('tenant_id', '=', tenantId).executeTakeFirst();
    return row ? viewOf(row) : null;
  }

  /**
   * Replaces the tenant's settings whole (values trimmed; an empty optional one is null), if they are
   * still at `expectedVersion` (0: none saved yet); else 409, naming who saved them and when.
   */
  async function putSettings(tenantId: string, userId: string, input: NoticeSettings, expectedVersion: number): Promise<NoticeSettingsView> {
    const values = {
      creditor_name: required(input.creditor_name, 'creditor_name'),
      creditor_address: required(input.creditor_address, 'creditor_address'),
      creditor_phone: optional(input.creditor_phone),
      agency: required(input.agency, 'agency'),
      cra_name: optional(input.cra_name),
      cra_address: optional(input.cra_address),
      cra_phone: optional(input.cra_phone),
      version: expectedVersion + 1,
      updated_by: userId,
      updated_at: deps.clock.now().getTime(),
    };
    // The reporting agency's telephone alone would be a notice nobody can write to: name and address together.
    if ((values.cra_name === null) !== (values.cra_address === null) || (values.cra_phone !== null && values.cra_name === null)) {
      throw new ApiError('unprocessable_entity', 'cra_name and cra_address go together: give both (and cra_phone if you like), or none.');
    }
    // One statement either way, so two saves from the same version cannot both win.
    const written =
      expectedVersion === 0
        ? Number((await deps.db.insertInto('notice_settings').values({ tenant_id: tenantId, ...values }).onConflict((oc) => oc.column('tenant_id').doNothing()).executeTakeFirst()).numInsertedOrUpdatedRows ?? 0)
        : Number((await deps.db.updateTable('notice_settings').set(values).where('tenant_id', '=', tenantId).where('version', '=', expectedVersion).executeTakeFirst()).numUpdatedRows);
    if (written !== 1) throw await conflict(tenantId);
    return viewOf({ tenant_id: tenantId, ...values });
  }

  /** The 409 of a save that lost: who saved the settings now in force, and when. */
  async function conflict(tenantId: string): Promise<ApiError> {
    const row = await deps.db
      .selectFrom('notice_settings')
      .leftJoin('users', 'users.id', 'notice_settings.updated_by')
      .select(['notice_settings.updated_at', 'users.name'])
      .where('notice_settings.tenant_id', '=', tenantId)
      .executeTakeFirst();
    // Settings are never deleted: a save of version 1 or more with none saved named a version it never loaded.
    if (!row) return new ApiError('settings_version_conflict', 'No settings are saved yet: send expected_version 0 to save the first ones.');
    return new ApiError('settings_version_conflict', `These settings were saved by ${row.name ?? 'someone else'} at ${new Date(Number(row.updated_at)).toISOString()} since you loaded them; reload to see them.`);
  }

  /** The decision's notice, recorded as a reveal of the applicant; 404 when the decision took no adverse action. */
  async function noticeFor(scope: { tenantId: string; environment: Environment }, decisionId: string, actor: Actor): Promise<AdverseActionNotice> {
    const explained = await deps.reporting.explainDecision(scope, decisionId);
    if (!explained) throw new ApiError('not_found', 'No such decision in this environment.');
    const [consumer, settings] = await Promise.all([deps.consumers.findConsumer(scope, explained.row.consumer_id), getSettings(scope.tenantId)]);
    // As the referral queue's reveal: a notice is addressed to someone, or it is not made (and nothing is recorded).
    if (!consumer) throw new ApiError('not_found', 'This decision has no applicant on record.');
    const notice = build(explained, settings, { firstName: consumer.firstName, lastName: consumer.lastName, address: consumer.address });
    if (!notice) throw new ApiError('not_found', noNoticeMessage(explained.row));
    await deps.db.transaction().execute((trx) =>
      deps.underwriting.recordAction(trx, explained.row, actor, 'pii_revealed', { fields: ['first_name', 'last_name', 'address'], purpose: 'adverse_action_notice' }),
    );
    return notice;
  }

  /**
   * The notice over `/v1` (docs/decisions.md, "Adverse-action notice"): the same letter without the
   * applicant, whose name and address the API never returns (the lender addresses the letter from
   * its own records), so nothing is revealed and nothing is recorded. A decision of another product
   * than the path's is not found; one that took no adverse action is `no_adverse_action`.
   */
  async function apiNoticeFor(scope: { tenantId: string; environment: Environment }, product: DecisionsTable['product'], decisionId: string): Promise<ApiAdverseActionNotice> {
    const explained = await deps.reporting.explainDecision(scope, decisionId, product);
    if (!explained) throw new ApiError('not_found', `No ${product === 'bnpl' ? 'BNPL' : 'auto-loan'} decision with this decision_id exists for this API key.`);
    const notice = build(explained, await getSettings(scope.tenantId), null);
    if (!notice) throw new ApiError('no_adverse_action', noNoticeMessage(explained.row));
    const { applicant: _none, ...rest } = notice;
    return rest;
  }

  function build(explained: NonNullable<Awaited<ReturnType<ReportingService['explainDecision']>>>, settings: NoticeSettings | null, applicant: NoticeApplicant | null): AdverseActionNotice | null {
    const { row, explanation, lastOverrideAt, consumerReportUsed } = explained;
    return buildAdverseActionNotice({
      row,
      reasons: explanation.reasons,
      counterofferReasons: explanation.counterofferReasons,
      consumerReportUsed,
      creditScore: explanation.creditScoreDisclosure,
      actionAt: lastOverrideAt ?? new Date(row.completed_at ?? row.updated_at),
      applicant,
      settings,
      today: deps.clock.now(),
    });
  }

  return { getSettings, putSettings, noticeFor, apiNoticeFor };
}

export type NoticesService = ReturnType<typeof createNoticesService>;

function viewOf({ tenant_id: _tenant, updated_at, ...settings }: NoticeSettingsTable): NoticeSettingsView {
  return { ...settings, updated_at: new Date(Number(updated_at)) };
}

function required(value: string | null | undefined, name: string): string {
  const v = (value ?? '').trim();
  if (v.length === 0) throw new ApiError('unprocessable_entity', `${name} is required: the notice must name it (12 CFR 1002.9(a)(2)).`);
  return v;
}

function optional(value: string | null | undefined): string | null {
  const v = (value ?? '').trim();
  return v.length === 0 ? null : v;
}

/** Why a decision has no notice: undecided, or approved as requested. */
function noNoticeMessage(row: Pick<DecisionsTable, 'status' | 'outcome'>): string {
  return row.status !== 'complete' || row.outcome === 'referred'
    ? 'This decision has no adverse-action notice: it has not been decided yet (pending or referred).'
    : 'This decision has no adverse-action notice: it was approved as requested.';
}
