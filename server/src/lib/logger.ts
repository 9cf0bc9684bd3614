/**
 * Structured JSON logs (pino). PII never reaches a log line: request bodies are not logged, and
 * the redaction list below censors the fields that could carry identity or secrets wherever they
 * appear in a logged object. Every request's lines carry its `reqId` (the public request id).
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.ssn_last4',
  '*.ssnLast4',
  '*.dob',
  '*.email',
  '*.phone',
  '*.first_name',
  '*.last_name',
  '*.firstName',
  '*.lastName',
  '*.address',
  '*.api_key',
  '*.apiKey',
  '*.secret',
  '*.password',
];

/**
 * What a request log line says about the request. The hosted-verification token in `/verify/{token}`
 * is a bearer capability for the consumer's page, so it is masked like a key.
 */
function serializeRequest(req: { method?: string; url?: string; ip?: string; socket?: { remotePort?: number } }) {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? req.url.replace(/^\/verify\/[^/?]+/, '/verify/[token]') : req.url,
    remoteAddress: req.ip,
  };
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { service: 'cds' },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { req: serializeRequest },
    },
    destination ?? pino.destination({ dest: 2, sync: false }),
  );
}
