import { api, type Page } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

export interface ReviewDocument {
  id: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  document_type: string;
  document_request_id: string | null;
  uploaded_at: string;
}

export interface ReviewItem {
  decision_id: string;
  kyc_tier: string;
  outcome: string | null;
  verification_state: string | null;
  verification_failed: boolean;
  status: 'pending' | 'accepted' | 'rejected';
  version: number;
  opened_at: string;
  reviewed_by: string | null;
  reviewed_at: string | null;
  review_note: string | null;
  documents: ReviewDocument[];
}

export type ReviewFilter = 'pending' | 'reviewed' | 'all';

export const verificationReviewApi = {
  list: (env: Environment, status: ReviewFilter, page: number) => api.get<Page<ReviewItem>>(`/verification-review/${env}`, { status, page, page_size: 20 }),
  /** The document's address for <img>/<a>: served by the portal API to roles with documents:read. */
  documentUrl: (env: Environment, documentId: string) => `/portal/api/verification-review/${env}/documents/${documentId}`,
  review: (env: Environment, decisionId: string, input: { result: 'accepted' | 'rejected'; note: string | null; expected_version: number }) =>
    api.post<{ item: ReviewItem }>(`/verification-review/${env}/${decisionId}/review`, input),
};
