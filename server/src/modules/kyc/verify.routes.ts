/**
 * The hosted verification pages at /verify/{token} (consumer_complete_url). Registered in their own
 * encapsulated plugin so form and multipart parsing exist here only (the /v1 API stays JSON-only).
 *
 * Protection: the token is the capability (256 random bits, looked up by hash). Every request for a
 * link, valid or not, draws from a bucket per client address (`PAGE_LIMITS`, shared through Redis
 * as the API's limits are), so an address that floods the pages with guesses gets 429 for every
 * link, and the same answer from every process: its guesses cost a lookup each at a bounded rate,
 * and a right one is refused like a wrong one. A consumer's whole verification is a dozen requests
 * or so. Every form also
 * carries a CSRF value that must match an HttpOnly, SameSite=Strict cookie bound to the token
 * (HMAC), so another site cannot submit a consumer's form. Responses forbid framing and caching,
 * send no Referer (the token is in the URL), and allow only our own stylesheet.
 */
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { servedOverHttps } from '../../http/transport-security.js';
import { safeEqual } from '../../lib/crypto.js';
import { MAX_DOCUMENT_BYTES, MAX_REQUESTED_FILES, type ActionResult, type DocumentUpload } from './verification.service.js';
import { renderDocumentRequestPage, renderForbidden, renderNotFound, renderPage, renderTooManyRequests, renderUnreadableUpload, VERIFY_CSS } from './verify.pages.js';

const CSRF_COOKIE = 'cds_verify';
/**
 * Requests for links per client address: 120, refilled at 5 a second. Generous for consumers who
 * share one address (a carrier's NAT, an office), each of whom needs a dozen requests or so.
 */
export const PAGE_LIMITS = { ratePerSecond: 5, burst: 120 };

type TokenRequest = FastifyRequest<{ Params: { token: string }; Body: Record<string, unknown> | undefined }>;

export async function registerVerifyRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const secure = servedOverHttps(ctx.config);
  const csrfKey = createHmac('sha256', ctx.config.dataEncryptionKey).update('cds-verify-csrf').digest();
  const csrfFor = (nonce: string, token: string) => createHmac('sha256', csrfKey).update(`${nonce}:${token}`).digest('base64url');

  await app.register(async (verify) => {
    await verify.register(formbody, { bodyLimit: 4 * 1024 });
    await verify.register(multipart, { throwFileSizeLimit: false, limits: { fileSize: MAX_DOCUMENT_BYTES, files: 1, fields: 4, fieldSize: 1024 } });

    verify.addHook('onSend', async (_request, reply, payload) => {
      reply.headers({
        'Content-Security-Policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
        'X-Frame-Options': 'DENY',
        // Strict-Transport-Security: on every response over HTTPS (http/transport-security.ts).
      });
      if (!reply.hasHeader('Cache-Control')) reply.header('Cache-Control', 'no-store');
      return payload;
    });

    verify.get('/verify/assets/verify.css', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('text/css; charset=utf-8').header('Cache-Control', 'public, max-age=86400').send(VERIFY_CSS),
    );

    // Every route with a token (not the stylesheet, which the 429 page itself needs) draws first,
    // before the token is looked up.
    verify.addHook('preHandler', async (request, reply) => {
      if ((request.params as { token?: unknown } | undefined)?.token === undefined) return undefined;
      const limit = await ctx.rateLimiter.take(`verify-pages:${request.ip}`, PAGE_LIMITS);
      if (limit.allowed) return undefined;
      return reply.code(429).header('Retry-After', String(limit.retryAfterSeconds)).type('text/html; charset=utf-8').send(renderTooManyRequests());
    });

    /** Render a result; a fresh CSRF nonce cookie goes with every page. */
    const render = (request: TokenRequest, reply: FastifyReply, result: ActionResult, status = 200) => {
      if (result.kind === 'not_found') return reply.code(404).type('text/html; charset=utf-8').send(renderNotFound());
      const nonce = ctx.random.bytes(16).toString('base64url');
      reply.header('Set-Cookie', `${CSRF_COOKIE}=${nonce}; Path=/verify; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`);
      const action = `/verify/${request.params.token}`;
      const form = { action, csrf: csrfFor(nonce, request.params.token) };
      const html = result.kind === 'documents' ? renderDocumentRequestPage(result.page, form) : renderPage(result.page, form);
      return reply.code(status).type('text/html; charset=utf-8').send(html);
    };

    const csrfValid = (request: TokenRequest, field: unknown) => {
      const nonce = readCookie(request.headers.cookie, CSRF_COOKIE);
      return typeof nonce === 'string' && typeof field === 'string' && safeEqual(csrfFor(nonce, request.params.token), field);
    };
    const unreadable = (reply: FastifyReply) => reply.code(400).type('text/html; charset=utf-8').send(renderUnreadableUpload());
    const forbidden = (reply: FastifyReply) => reply.code(403).type('text/html; charset=utf-8').send(renderForbidden());
    const params = { type: 'object', required: ['token'], properties: { token: { type: 'string', maxLength: 64 } } } as const;
    const formSchema = { hide: true, params } as const;

    verify.get<{ Params: { token: string } }>('/verify/:token', { schema: formSchema }, async (request, reply) =>
      render(request as TokenRequest, reply, await ctx.verification.page(request.params.token)),
    );

    verify.post<{ Params: { token: string }; Body: Record<string, unknown> }>('/verify/:token/send-code', { schema: formSchema }, async (request, reply) => {
      if (!csrfValid(request, request.body?.csrf)) return forbidden(reply);
      return render(request, reply, await ctx.verification.sendCode(request.params.token));
    });

    verify.post<{ Params: { token: string }; Body: Record<string, unknown> }>('/verify/:token/code', { schema: formSchema }, async (request, reply) => {
      if (!csrfValid(request, request.body?.csrf)) return forbidden(reply);
      const result = await ctx.verification.submitCode(request.params.token, String(request.body?.code ?? ''));
      return render(request, reply, result, result.kind === 'ok' && result.page.notice?.kind === 'error' ? 422 : 200);
    });

    verify.post<{ Params: { token: string }; Body: Record<string, unknown> }>('/verify/:token/identity', { schema: formSchema }, async (request, reply) => {
      if (!csrfValid(request, request.body?.csrf)) return forbidden(reply);
      const result = await ctx.verification.submitIdentity(request.params.token, { ssnLast4: String(request.body?.ssn_last4 ?? ''), dob: String(request.body?.dob ?? '') });
      return render(request, reply, result, result.kind === 'ok' && result.page.notice?.kind === 'error' ? 422 : 200);
    });

    verify.post<{ Params: { token: string } }>('/verify/:token/document', { schema: formSchema }, async (request, reply) => {
      if (!request.isMultipart()) return reply.code(415).type('text/html; charset=utf-8').send(renderForbidden());
      let csrf: unknown;
      let upload: DocumentUpload | null = null;
      let tooLarge = false;
      const read = await readMultipart(async () => {
        for await (const part of request.parts()) {
          if (part.type === 'field' && part.fieldname === 'csrf') csrf = part.value;
          if (part.type === 'file' && part.fieldname === 'document') {
            const bytes = await part.toBuffer().catch(() => null);
            if (bytes === null || part.file.truncated) tooLarge = true;
            else upload = { contentType: part.mimetype, bytes };
          } else if (part.type === 'file') {
            // A file under another name is skipped, but must be drained or the request never ends.
            part.file.resume();
          }
        }
      });
      if (!read) return unreadable(reply);
      if (!csrfValid(request as TokenRequest, csrf)) return forbidden(reply);
      const result = await ctx.verification.submitDocument(request.params.token, tooLarge ? 'too_large' : upload);
      return render(request as TokenRequest, reply, result, result.kind === 'ok' && result.page.notice?.kind === 'error' ? 422 : 200);
    });

    // An underwriter's document request: one file field per requested type, named document_<type>.
    verify.post<{ Params: { token: string } }>('/verify/:token/documents', { schema: formSchema }, async (request, reply) => {
      if (!request.isMultipart()) return reply.code(415).type('text/html; charset=utf-8').send(renderForbidden());
      let csrf: unknown;
      const uploads = new Map<string, DocumentUpload | 'too_large'>();
      const read = await readMultipart(async () => {
        for await (const part of request.parts({ limits: { files: MAX_REQUESTED_FILES, fields: 4 } })) {
          if (part.type === 'field' && part.fieldname === 'csrf') csrf = part.value;
          if (part.type === 'file' && part.fieldname.startsWith('document_')) {
            const bytes = await part.toBuffer().catch(() => null);
            const type = part.fieldname.slice('document_'.length);
            if (bytes === null || part.file.truncated) uploads.set(type, 'too_large');
            else if (bytes.length > 0) uploads.set(type, { contentType: part.mimetype, bytes });
          } else if (part.type === 'file') {
            part.file.resume();
          }
        }
      });
      if (!read) return unreadable(reply);
      if (!csrfValid(request as TokenRequest, csrf)) return forbidden(reply);
      const result = await ctx.verification.submitRequestedDocuments(request.params.token, uploads);
      const failed = result.kind === 'documents' && result.page.notice?.kind === 'error';
      return render(request as TokenRequest, reply, result, failed ? 422 : 200);
    });
  });
}

/**
 * Runs a multipart read; false when the body is not readable multipart (no boundary, cut short,
 * malformed headers): the parser's errors are the client's fault, not a 500. Limits that the
 * parser enforces (too many files or fields) still surface as the framework's 413.
 */
async function readMultipart(read: () => Promise<void>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch (err) {
    const status = (err as { statusCode?: unknown }).statusCode;
    if (typeof status === 'number') throw err;
    // Only the parser runs inside `read` (file reads catch their own errors).
    return false;
  }
}

/** The value of one cookie from a Cookie header (our nonce is base64url, so no decoding is needed). */
function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
