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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { service: 'cds' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 2, sync: false }),
  );
}
