/**
 * The portal API's wire shapes: snake_case JSON, times as ISO 8601 with Z, converted here and
 * nowhere else. Secrets (full API keys, signing secrets, invitation links) are never part of these
 * views; the routes that create them add them once to their own response.
 */
import type { ApiKeySummary } from '../api-keys/api-keys.service.js';
import type { Consumer } from '../consumers/consumers.service.js';
import type { ConsumerApplication } from '../decisions/decisions.service.js';
import type { Dashboard, DecisionDetail, DecisionListItem } from '../reporting/reporting.service.js';
import type { WebhookAttemptView, WebhookDeliveryView, WebhookEndpointView } from '../webhooks/webhooks.service.js';
import type { PortalInvitation, PortalSession, PortalUser } from './accounts.service.js';
import { permissionsOf } from './permissions.js';

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function presentUser(u: PortalUser) {
  return { id: u.id, email: u.email, name: u.name, role: u.role, created_at: iso(u.createdAt), last_login_at: iso(u.lastLoginAt) };
}

export function presentSession(s: PortalSession, tenant: { id: string; name: string }) {
  return {
    authenticated: true,
    csrf_token: s.csrfToken,
    user: presentUser(s.user),
    tenant: { id: tenant.id, name: tenant.name },
    permissions: permissionsOf(s.user.role),
    session: { idle_expires_at: iso(s.idleExpiresAt), absolute_expires_at: iso(s.absoluteExpiresAt) },
  };
}

export function presentInvitation(i: PortalInvitation) {
  return { id: i.id, email: i.email, role: i.role, invited_by: i.invitedBy, created_at: iso(i.createdAt), expires_at: iso(i.expiresAt) };
}

export function presentApiKey(k: ApiKeySummary) {
  return {
    id: k.id,
    environment: k.environment,
    label: k.label,
    last4: k.last4,
    status: k.revokedAt === null ? 'active' : 'revoked',
    created_at: iso(k.createdAt),
    last_used_at: iso(k.lastUsedAt),
    revoked_at: iso(k.revokedAt),
  };
}

export function presentEndpoint(e: WebhookEndpointView) {
  return {
    id: e.id,
    environment: e.environment,
    url: e.url,
    description: e.description,
    events: e.events,
    state: e.state,
    disabled_reason: e.disabledReason,
    disabled_at: iso(e.disabledAt),
    consecutive_failures: e.consecutiveFailures,
    previous_secret_expires_at: iso(e.previousSecretExpiresAt),
    created_at: iso(e.createdAt),
    updated_at: iso(e.updatedAt),
    version: e.version,
  };
}

export function presentDelivery(d: WebhookDeliveryView) {
  return {
    id: d.id,
    endpoint_id: d.endpointId,
    event_id: d.eventId,
    event_type: d.eventType,
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: iso(d.nextAttemptAt),
    last_attempt_at: iso(d.lastAttemptAt),
    last_response_status: d.lastResponseStatus,
    last_error_kind: d.lastErrorKind,
    finished_at: iso(d.finishedAt),
    created_at: iso(d.createdAt),
  };
}

export function presentAttempt(a: WebhookAttemptView) {
  return {
    id: a.id,
    delivery_id: a.deliveryId,
    attempt: a.attempt,
    request_headers: a.requestHeaders,
    request_body: a.requestBody,
    response_status: a.responseStatus,
    response_body: a.responseBody,
    duration_ms: a.durationMs,
    error_kind: a.errorKind,
    error_detail: a.errorDetail,
    created_at: iso(a.createdAt),
  };
}

export function presentConsumer(c: Consumer) {
  return {
    id: c.id,
    environment: c.environment,
    name: `${c.firstName} ${c.lastName}`,
    first_name: c.firstName,
    last_name: c.lastName,
    email: c.email,
    phone: c.phone,
    tier: c.sandboxProfile,
    seeded: c.sandboxProfile !== null,
    identity_status: c.identityStatus,
    linked_accounts: c.linkedAccounts,
    history_reset_at: iso(c.historyResetAt),
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
  };
}

export function presentApplication(a: ConsumerApplication) {
  return {
    decision_id: a.decisionId,
    application_id: a.applicationId,
    product: a.product,
    status: a.status,
    outcome: a.outcome,
    kyc_tier: a.kycTier,
    kyc_status: a.kycStatus,
    currency: a.currency,
    requested_amount: a.requestedAmount,
    approved_amount: a.approvedAmount,
    plan: a.plan,
    created_at: iso(a.createdAt),
    completed_at: iso(a.completedAt),
  };
}

export function presentDecisionListItem(i: DecisionListItem) {
  return {
    decision_id: i.decisionId,
    application_id: i.applicationId,
    consumer_id: i.consumerId,
    product: i.product,
    status: i.status,
    outcome: i.outcome,
    kyc_tier: i.kycTier,
    kyc_status: i.kycStatus,
    currency: i.currency,
    merchant_name: i.merchantName,
    merchant_category: i.merchantCategory,
    requested_amount: i.requestedAmount,
    approved_amount: i.approvedAmount,
    plan: i.plan,
    term_months: i.termMonths,
    apr: i.apr,
    score: i.score,
    risk_grade: i.riskGrade,
    reason_codes: i.reasonCodes,
    adverse_action: i.adverseAction,
    notice_due_by: i.noticeDueBy,
    engine_version: i.engineVersion,
    latency_ms: i.latencyMs,
    created_at: iso(i.createdAt),
    completed_at: iso(i.completedAt),
  };
}

export function presentDecisionDetail(d: DecisionDetail) {
  const x = d.explanation;
  return {
    summary: presentDecisionListItem(d.item),
    decision: d.decision,
    explanation: {
      inputs: x.inputs,
      features: x.features,
      partial_scores: x.partialScores.map((p) => ({
        characteristic: p.characteristic,
        feature: p.feature,
        value: p.value,
        attribute: p.attribute,
        data_present: p.dataPresent,
        points: p.points,
        max_points: p.maxPoints,
        points_below_maximum: p.pointsBelowMaximum,
        reason_code: p.reasonCode,
        reason: p.reason,
      })),
      reasons: x.reasons,
      counteroffer_reasons: x.counterofferReasons,
      score: x.score,
      credit_score_disclosure: x.creditScoreDisclosure && {
        score: x.creditScoreDisclosure.score,
        range: x.creditScoreDisclosure.range,
        scored_at: x.creditScoreDisclosure.scoredAt,
        scorecard: x.creditScoreDisclosure.scorecard,
        credit_file_source: x.creditScoreDisclosure.creditFileSource,
        key_factors: x.creditScoreDisclosure.keyFactors,
      },
      risk_grade: x.riskGrade,
      confidence: x.confidence,
      versions: { engine_version: x.versions.engineVersion, engine: x.versions.engine, scorecard: x.versions.scorecard, policy: x.versions.policy },
      kyc: x.kyc,
      offer: x.offer,
      timings: x.timings,
      record: x.record,
    },
    events: d.events.map((e) => ({ id: e.id, type: e.type, subject_id: e.subjectId, data: e.data, created_at: iso(e.createdAt) })),
    deliveries: d.deliveries.map((w) => ({ ...presentDelivery(w.delivery), endpoint_url: w.endpointUrl, attempt_history: w.attempts.map(presentAttempt) })),
  };
}

export function presentDashboard(environment: string, d: Dashboard) {
  return {
    environment,
    from: iso(d.from),
    to: iso(d.to),
    hours: d.hours.map((h) => ({
      hour: iso(h.hour),
      approved: h.approved,
      declined: h.declined,
      referred: h.referred,
      pending: h.pending,
      total: h.total,
      approval_rate: h.approvalRate,
      latency_count: h.latencyCount,
      latency_p50_ms: h.latencyP50Ms,
      latency_p99_ms: h.latencyP99Ms,
    })),
    totals: {
      approved: d.totals.approved,
      declined: d.totals.declined,
      referred: d.totals.referred,
      pending: d.totals.pending,
      total: d.totals.total,
      approval_rate: d.totals.approvalRate,
    },
    latency: { count: d.latency.count, p50_ms: d.latency.p50Ms, p99_ms: d.latency.p99Ms },
    pending_verifications: { as_of: iso(d.pendingVerifications.asOf), total: d.pendingVerifications.total, buckets: d.pendingVerifications.buckets },
    webhooks: d.webhooks.map((e) => ({
      endpoint_id: e.endpointId,
      url: e.url,
      state: e.state,
      delivered: e.delivered,
      failed: e.failed,
      pending: e.pending,
      cancelled: e.cancelled,
      finished: e.delivered + e.failed,
      success_rate: e.successRate,
    })),
  };
}
