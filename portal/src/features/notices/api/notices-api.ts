import { api } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

/** What the tenant's notices say about the lender (one set per tenant, both environments). */
export interface NoticeSettings {
  creditor_name: string;
  /** Multi-line free text, as the lender typed it. */
  creditor_address: string;
  creditor_phone: string | null;
  /** The federal agency's name and address (Regulation B, Appendix A), multi-line. */
  agency: string;
  cra_name: string | null;
  cra_address: string | null;
  cra_phone: string | null;
  /** 1 on the first save, one more on each; a save sends the one it loaded (409 if it moved on). */
  version: number;
  updated_at: string;
  updated_by: string | null;
}

/** What Save sends: the whole set (an empty optional value is saved as not set). */
export type NoticeSettingsInput = Omit<NoticeSettings, 'version' | 'updated_at' | 'updated_by'>;

export type NoticeAction = 'declined' | 'counteroffer';

/** One decision's adverse-action notice (server/src/modules/notices/adverse-action-notice.ts). */
export interface AdverseActionNotice {
  decision_id: string;
  environment: Environment;
  product: 'bnpl' | 'auto_loan';
  action: NoticeAction;
  action_taken_at: string;
  /** ISO days (YYYY-MM-DD), UTC. */
  notice_date: string;
  due_by: string;
  applicant: { name: string; address_lines: string[] } | null;
  /** Amounts as "1250.00"; `product` and `terms` are the service's phrases ("a buy now, pay later loan", "in 6 monthly payments"; a counteroffer's end with its APR). */
  application: { amount: string; currency: string; plan: string | null; term_months: number | null; product: string; terms: string | null; applied_on: string };
  counteroffer: { amount: string; currency: string; plan: string | null; term_months: number | null; apr: string | null; product: string; terms: string | null } | null;
  principal_reasons: { heading: string; reasons: Array<{ code: string; reason: string }> };
  /** Part II (FCRA 615(a)): null when no consumer report was used for the decision. */
  consumer_report: {
    statement: string;
    agency: { name: string | null; address_lines: string[]; phone: string | null };
    credit_score: {
      statement: string;
      score: number;
      range: { min: number; max: number } | null;
      scored_on: string | null;
      key_factors: Array<{ code: string; reason: string | null }>;
    } | null;
  } | null;
  ecoa_notice: { statement: string; agency_lines: string[] };
  creditor: { name: string | null; address_lines: string[]; phone: string | null };
  /** Settings this notice needs that the tenant has not entered (`creditor_name`, `cra_address`, …). */
  missing_settings: string[];
  /** What the letter lacks that is not a setting: `principal_reasons` (a counteroffer made before its reasons were recorded). */
  incomplete: string[];
}

export const noticesApi = {
  settings: () => api.get<{ settings: NoticeSettings | null }>('/settings/notices'),
  /** `expectedVersion`: the version loaded, 0 when nothing was saved yet; another admin's save since then is 409 `settings_version_conflict`. */
  saveSettings: (input: NoticeSettingsInput, expectedVersion: number) => api.put<{ settings: NoticeSettings }>('/settings/notices', { expected_version: expectedVersion, ...input }),
  /** A POST: making the notice reveals the applicant's name and address, and the service records that. */
  make: (env: Environment, decisionId: string) => api.post<{ notice: AdverseActionNotice }>(`/decisions/${env}/${decisionId}/adverse-action-notice`),
};
