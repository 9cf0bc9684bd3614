/**
 * Request logging: one line per request, and no logger built for a request that writes nothing
 * else.
 *
 * How it works. Fastify's default writes two lines per request ("incoming request" when it
 * arrives, "request completed" when it is answered) through a pino child logger it makes for
 * every request. At the default LOG_LEVEL=info that was most of what a trivial request cost: a
 * `GET /healthz` took about three times the CPU it takes at warn (docs/performance.md, "Request
 * logging"). Instead:
 * - `AccessLogController` writes nothing on arrival and one line when the response has been sent,
 *   with both former lines' fields: `reqId`, `req` {method, url (masked as before), remoteAddress},
 *   `res` {statusCode}, `responseTime` (ms); query values masked (lib/logger.ts). A response that
 *   failed to send is still "request errored" at error level. The line is written with `reqId` in
 *   it, so it needs no per-request logger, and without redaction, which cost more than the rest
 *   of the line and has nothing to find in these fixed fields (createAccessLogWriter).
 * - `lazyRequestLogger` is Fastify's child-logger factory: `request.log` is a small object that
 *   makes pino's child (bound to `reqId`) the first time a line at an enabled level goes through
 *   it. Most requests never write one, and pino's child creation (bindings serialized, redaction
 *   set up) was a few per cent of every request.
 * A request that never completes (the client went away) has no line, as a request that never
 * arrived in full had none before: HTTP_REQUEST_TIMEOUT_MS and the database's statement time-out
 * bound how long any request can wait.
 */
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';
import { createAccessLogWriter } from '../lib/logger.js';

export class AccessLogController extends LogController {
  private readonly writer: Logger;
  constructor(private readonly logger: Logger) {
    super({});
    this.writer = createAccessLogWriter(logger);
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const fields = { reqId: request.id, req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    // An error may say anything: that line goes through the redacting logger.
    if (error) this.logger.error({ ...fields, err: error }, 'request errored');
    else if (this.logger.isLevelEnabled('info')) this.writer.info(fields, 'request completed');
  }
}

/** Fastify's `childLoggerFactory`: a request logger that becomes pino's child only when used. */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  // A route with a level of its own (none of ours has one) gets its child at once: the level
  // check below asks the parent.
  if (options.level !== undefined) return logger.child(bindings, options);
  // Fastify's type is the subset it uses; the logger is the process's pino (build-app.ts).
  return new LazyChild(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
type Level = (typeof LEVELS)[number];

class LazyChild {
  #child: Logger | null = null;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  static {
    // One method per level, each `write(level, ...)`.
    for (const level of LEVELS) {
      Object.defineProperty(LazyChild.prototype, level, {
        value(this: LazyChild, ...args: unknown[]) {
          this.write(level, args);
        },
      });
    }
  }

  private real(): Logger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return (this.#child ?? this.parent).level;
  }
  set level(level: string) {
    this.real().level = level;
  }

  private write(level: Level, args: unknown[]): void {
    if (!(this.#child ?? this.parent).isLevelEnabled(level)) return;
    (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }
}
