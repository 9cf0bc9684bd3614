/**
 * The credit-data gateway contract (docs/credit-gateway.md) as pure functions: building the
 * request body, and turning whatever the gateway answered (status + body text) into either a
 * CreditFile or a failure with a PII-free detail.
 *
 * Validation is strict on purpose: a file that scores a consumer must be exactly what the contract
 * says, so a wrong type, a negative count or a fraction is a failure (a referral with AA-25), never a
 * guess. Unknown extra fields are ignored so a gateway can add fields without breaking us.
 * Details name fields and status codes only; they never echo a value the gateway sent, because
 * that value may be the consumer's data.
 */
import { emptyCreditFile, type CreditFile, type CreditSubject } from './credit-data.types.js';

export { emptyCreditFile };

export const CREDIT_FILES_PATH = '/v1/credit-files';

/** Error codes a gateway may put in `error`; anything else is reported as "unlisted". */
export const GATEWAY_ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'no_file',
  'request_id_conflict',
  'payload_too_large',
  'rate_limited',
  'internal_error',
  'bureau_unavailable',
  'bureau_timeout',
] as const;
export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

export interface GatewayRequestBody {
  request_id: string;
  subject: {
    first_name: string;
    last_name: string;
    dob: string;
    ssn_last4: string | null;
    zip: string;
  };
}

/** The `file` object of a 200 answer: CreditFile in snake_case, minus `source` (ours) and `has_file` (implied). */
export interface WireCreditFile {
  file_id: string;
  has_file?: true;
  tradelines: number;
  oldest_tradeline_months: number;
  revolving_utilization_pct: number;
  delinquencies_30d_last_24m: number;
  delinquencies_90d_last_24m: number;
  collections_or_judgments: number;
  bankruptcy: boolean;
  foreclosure_or_repossession: boolean;
  inquiries_last_6m: number;
  monthly_obligations_cents: number;
  estimated_monthly_income_cents: number;
}

export type GatewayAnswer =
  | { kind: 'file'; file: CreditFile }
  | {
      kind: 'failed';
      detail: string;
      /**
       * True when the gateway itself is evidently working and only refused this one request
       * (400, 409, 413): the circuit breaker counts it as a success, not as an outage.
       */
      gatewayHealthy: boolean;
    };

const MAX_FILE_ID_LENGTH = 128;
const FILE_ID_PATTERN = /^[\x21-\x7e]+$/;
const MAX_PROBLEMS_IN_DETAIL = 5;
const REQUEST_SPECIFIC_STATUSES = new Set([400, 409, 413]);

/**
 * Checks the configured gateway URL once, at boot: https only (the body carries PII), and nothing
 * in it that would be sent somewhere surprising (user-info, query, fragment).
 */
export function parseGatewayBaseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RangeError('credit gateway baseUrl is not a valid URL');
  }
  if (url.protocol !== 'https:') throw new RangeError('credit gateway baseUrl must use https');
  if (url.username || url.password) throw new RangeError('credit gateway baseUrl must not contain user-info');
  if (url.search || url.hash) throw new RangeError('credit gateway baseUrl must not contain a query or fragment');
  return url;
}

/** `{baseUrl}/v1/credit-files`, keeping any path prefix the lender's gateway lives under. */
export function creditFilesUrl(baseUrl: URL): URL {
  const prefix = baseUrl.pathname.replace(/\/+$/, '');
  return new URL(`${prefix}${CREDIT_FILES_PATH}`, baseUrl);
}

/** `gateway:<host>`, the CreditFile source and the connector name. */
export function gatewaySourceName(baseUrl: URL): string {
  return `gateway:${baseUrl.hostname}`;
}

export function buildGatewayRequest(requestId: string, subject: CreditSubject): GatewayRequestBody {
  return {
    request_id: requestId,
    subject: {
      first_name: subject.firstName,
      last_name: subject.lastName,
      dob: subject.dob,
      ssn_last4: subject.ssnLast4,
      zip: subject.zip,
    },
  };
}


export function interpretGatewayResponse(
  status: number,
  bodyText: string,
  context: { source: string; requestId: string },
): GatewayAnswer {
  const body = parseJson(bodyText);

  if (status >= 200 && status < 300) {
    if (body === undefined) return unhealthy(`gateway answered HTTP ${status} with a body that is not JSON`);
    if (!isPlainObject(body)) return unhealthy(`gateway answered HTTP ${status} with a body that is not a JSON object`);
    const parsed = parseWireCreditFile(body.file, context.source);
    if (!parsed.ok) return unhealthy(`invalid credit file from gateway: ${summarize(parsed.problems)}`);
    return { kind: 'file', file: parsed.file };
  }

  // Only an explicit `no_file` means "no file": a bare 404 is a wrong URL or a proxy page, and
  // reading it as "no credit file" would knock a consumer out for our misconfiguration.
  if (status === 404 && isPlainObject(body) && body.error === 'no_file') {
    if (body.file_id === undefined) return { kind: 'file', file: emptyCreditFile(context.requestId, context.source) };
    if (!isValidFileId(body.file_id)) return unhealthy('invalid no_file answer from gateway: file_id must be 1-128 printable ASCII characters');
    return { kind: 'file', file: emptyCreditFile(body.file_id, context.source) };
  }

  const detail = `gateway answered HTTP ${status}${describeErrorCode(body)}`;
  return { kind: 'failed', detail, gatewayHealthy: REQUEST_SPECIFIC_STATUSES.has(status) };
}

export function parseWireCreditFile(
  value: unknown,
  source: string,
): { ok: true; file: CreditFile } | { ok: false; problems: string[] } {
  if (!isPlainObject(value)) return { ok: false, problems: ['file must be a JSON object'] };
  const problems: string[] = [];

  const count = (name: string): number => {
    const v = value[name];
    if (v === undefined) problems.push(`${name} is missing`);
    else if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) problems.push(`${name} must be a non-negative integer`);
    else return v === 0 ? 0 : v; // JSON "-0" parses to -0, which is not a count anyone means
    return 0;
  };
  const flag = (name: string): boolean => {
    const v = value[name];
    if (v === undefined) problems.push(`${name} is missing`);
    else if (typeof v !== 'boolean') problems.push(`${name} must be a boolean`);
    else return v;
    return false;
  };

  let fileId = '';
  if (value.file_id === undefined) problems.push('file_id is missing');
  else if (!isValidFileId(value.file_id)) problems.push('file_id must be 1-128 printable ASCII characters');
  else fileId = value.file_id;

  if (value.has_file !== undefined && value.has_file !== true) {
    problems.push('has_file must be true or absent in a 200 answer (no file is a 404 no_file)');
  }

  const file: CreditFile = {
    fileId,
    source,
    hasFile: true,
    tradelines: count('tradelines'),
    oldestTradelineMonths: count('oldest_tradeline_months'),
    revolvingUtilizationPct: count('revolving_utilization_pct'),
    delinquencies30dLast24m: count('delinquencies_30d_last_24m'),
    delinquencies90dLast24m: count('delinquencies_90d_last_24m'),
    collectionsOrJudgments: count('collections_or_judgments'),
    bankruptcy: flag('bankruptcy'),
    foreclosureOrRepossession: flag('foreclosure_or_repossession'),
    inquiriesLast6m: count('inquiries_last_6m'),
    monthlyObligationsCents: count('monthly_obligations_cents'),
    estimatedMonthlyIncomeCents: count('estimated_monthly_income_cents'),
  };
  return problems.length > 0 ? { ok: false, problems } : { ok: true, file };
}

function unhealthy(detail: string): GatewayAnswer {
  return { kind: 'failed', detail, gatewayHealthy: false };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isValidFileId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_FILE_ID_LENGTH && FILE_ID_PATTERN.test(value);
}

/** Echo the gateway's error code only when it is one of ours: a free-form string could carry anything. */
function describeErrorCode(body: unknown): string {
  if (!isPlainObject(body) || typeof body.error !== 'string') return '';
  return (GATEWAY_ERROR_CODES as readonly string[]).includes(body.error) ? ` (${body.error})` : ' (unlisted error code)';
}

function summarize(problems: string[]): string {
  const shown = problems.slice(0, MAX_PROBLEMS_IN_DETAIL).join('; ');
  const rest = problems.length - MAX_PROBLEMS_IN_DETAIL;
  return rest > 0 ? `${shown}; and ${rest} more` : shown;
}
