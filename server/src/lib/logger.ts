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
 * is a bearer capability for the consumer's page, so it is masked like a key; query values are
 * masked too (a portal search can be a consumer's name), their names kept.
 */
function serializeRequest(req: { method?: string; url?: string; ip?: string; socket?: { remotePort?: number } }) {
  return { method: req.method, url: typeof req.url === 'string' ? loggedUrl(req.url) : req.url, remoteAddress: req.ip };
}

function loggedUrl(url: string): string {
  const masked = url.replace(/^\/verify\/[^/?]+/, '/verify/[token]');
  const q = masked.indexOf('?');
  if (q < 0) return masked;
  const names = masked.slice(q + 1).split('&').map((pair) => `${pair.split('=', 1)[0]}=[redacted]`);
  return `${masked.slice(0, q)}?${names.join('&')}`;
}

/** What every line has, whichever logger writes it. */
const LINE_SHAPE = { base: { service: 'cds' }, timestamp: pino.stdTimeFunctions.isoTime, serializers: { req: serializeRequest } };

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, ...LINE_SHAPE },
    destination ?? pino.destination({ dest: 2, sync: false }),
  );
}

/**
 * The access log's writer (http/request-logging.ts): lines shaped as `logger`'s, into the same
 * destination, without its redaction. Redaction (fast-redact over the wildcard paths above) was
 * about two thirds of what a line cost (measured: 21 µs against 6); the access line's fields are
 * fixed (request id, method, masked URL, address, status, time) and hold no personal data by
 * construction. Its level is the lowest: the caller asks `logger` whether to write.
 */
export function createAccessLogWriter(logger: Logger): Logger {
  const destination = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  return pino({ level: 'trace', ...LINE_SHAPE }, destination);
}

/**
 * Process warnings as JSON log lines. Node prints each warning (`process.emitWarning`: its own
 * deprecations, a listener leak, ours such as a credit policy's compiled graph being retired, ADR
 * 0020) as a plain-text line on stderr, in the middle of the JSON lines a log pipeline parses. This
 * takes Node's printer off the 'warning' event and logs each one at `warn` with its name and code.
 * Returns what puts Node's printer back (tests).
 */
export function logProcessWarnings(logger: Logger): () => void {
  const printers = process.listeners('warning');
  for (const printer of printers) process.removeListener('warning', printer);
  const onWarning = (warning: Error & { code?: string }) => logger.warn({ warning: { name: warning.name, code: warning.code ?? null } }, warning.message);
  process.on('warning', onWarning);
  return () => {
    process.removeListener('warning', onWarning);
    for (const printer of printers) process.on('warning', printer);
  };
}
