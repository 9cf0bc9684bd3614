/**
 * One generator per route URL of the application, keyed exactly as Fastify declares the URL. The
 * suite enumerates the routes from the app (BuildAppOptions.onRoute) and fails when a route has
 * no entry here, or an entry names a route that no longer exists: a new route is fuzzed as soon
 * as it is listed, and it cannot be added without being listed.
 *
 * Each generator starts from a valid request for its route (valid BNPL and auto-loan bodies,
 * hosted-page forms with a working token and CSRF pair, portal sign-up and sign-in) and mutates
 * it with the hostile arbitraries; the surface says which response property applies.
 */
import fc from 'fast-check';
import {
  authorization, headersOf, hostileId, hostileQuery, hostileString, idempotencyKey, jsonContentType, methodFor, mutatedBody, BODY_LIMIT, REFLECTION_MARKER,
  type ApiKeys, type FuzzRequest,
} from './hostile-arbitraries.js';

/** 'api': JSON everywhere; 'hosted': /verify pages answer HTML; 'static': files and documentation pages. */
export type Surface = 'api' | 'hosted' | 'static';

/** Everything valid a generator can start from; built once per run by fuzz-setup.ts. */
export interface FuzzEnv {
  keys: ApiKeys;
  softConsumerId: string;
  bnplDecisionIds: string[];
  autoLoanDecisionIds: string[];
  pendingDecisionIds: string[];
  eventIds: string[];
  dealerIds: string[];
  /** A working hosted-page token with one CSRF pair (cookie value and the form's field). */
  verify: { tokens: string[]; cookie: string; csrf: string };
  /** A signed-in portal owner (cookies and CSRF header) and an anonymous CSRF pair. */
  portal: { sessionCookie: string; csrf: string; anonymousCookie: string; anonymousCsrf: string; email: string; password: string };
  /** Distinctive personal data put in request bodies: none of it may reach a log line. */
  pii: { firstName: string; lastName: string; email: string; phone: string; dob: string; line1: string; ssnLast4: string };
}

export interface RouteFuzz {
  surface: Surface;
  /** Methods this route really has (checked against the app); others are tried as confusion. */
  methods: string[];
  request(env: FuzzEnv): fc.Arbitrary<FuzzRequest>;
}

// ---------------------------------------------------------------------------------------------
// Building blocks

function jsonRequest(
  methods: string[],
  url: fc.Arbitrary<string>,
  body: fc.Arbitrary<{ body: Buffer; note: string }> | null,
  headers: fc.Arbitrary<Record<string, string | undefined>>,
): fc.Arbitrary<FuzzRequest> {
  return fc.record({ method: methodFor(methods), url, query: hostileQuery, body: body ?? fc.constant(null), contentType: jsonContentType, headers }).map((r) => {
    const sendsBody = r.body !== null && r.method !== 'GET' && r.method !== 'HEAD';
    return {
      method: r.method,
      url: r.url + r.query,
      headers: headersOf({ ...r.headers, ...(sendsBody ? { 'content-type': r.contentType } : {}) }),
      ...(sendsBody ? { body: r.body!.body } : {}),
      note: r.body?.note ?? 'no body',
    };
  });
}

const apiHeaders = (env: FuzzEnv, withIdempotency: boolean) =>
  fc.record({ authorization: authorization(env.keys), 'idempotency-key': withIdempotency ? idempotencyKey : fc.constant(undefined) });

/** Random JSON objects for routes whose body is not the point (coming soon, portal actions). */
const anyJsonBody = mutatedBody({ name: 'x', value: 1, nested: { list: [1, 'two'] } });

/** Fill every `:param` and `*` of a URL pattern. */
function fillPath(pattern: string, values: (param: string) => fc.Arbitrary<string>): fc.Arbitrary<string> {
  const parts = pattern.split('/').map((seg) => (seg.startsWith(':') ? values(seg.slice(1)) : seg === '*' ? values('*') : fc.constant(seg)));
  return fc.tuple(...parts).map((segs) => segs.join('/'));
}

/** Percent-encode every UTF-8 byte that is not unreserved (works for lone surrogates, unlike encodeURIComponent). */
export function formEncode(value: string): string {
  return [...Buffer.from(value, 'utf8')].map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/** A multipart/form-data body with fields and files. */
export function multipartBody(boundary: string, fields: Array<[string, string]>, files: Array<{ name: string; filename: string; type: string; bytes: Buffer }>): Buffer {
  const chunks: Buffer[] = [];
  for (const [name, value] of fields) chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  for (const f of files) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.filename}"\r\nContent-Type: ${f.type}\r\n\r\n`), f.bytes, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]), Buffer.alloc(2048, 0x42)]);

// ---------------------------------------------------------------------------------------------
// /v1

const bnplValid = (env: FuzzEnv) =>
  fc.constantFrom(
    { consumer: { consumer_id: env.softConsumerId }, transaction: { amount: '149.97', currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' } },
    {
      consumer: {
        first_name: env.pii.firstName, last_name: env.pii.lastName, email: env.pii.email, phone: env.pii.phone, dob: env.pii.dob, ssn_last4: env.pii.ssnLast4,
        address: { line1: env.pii.line1, city: 'Austin', state: 'TX', zip: '73301' },
      },
      transaction: { amount: '480.00', currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' },
      plan_preference: 'monthly',
    },
  );

const autoLoanValid = (env: FuzzEnv) => {
  const vehicle = { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' };
  const loan = { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' };
  return fc.constantFrom(
    { consumer: { consumer_id: env.softConsumerId }, vehicle, loan, channel: 'direct' },
    { consumer: { consumer_id: env.softConsumerId }, vehicle, loan, channel: 'indirect', dealer: { dealer_id: env.dealerIds[0] ?? '', markup_rate_pct: '1.00' } },
    {
      consumer: {
        first_name: env.pii.firstName, last_name: env.pii.lastName, email: env.pii.email, phone: env.pii.phone, dob: env.pii.dob, ssn_last4: env.pii.ssnLast4,
        address: { line1: env.pii.line1, city: 'Dayton', state: 'OH', zip: '45402' },
      },
      vehicle, loan: { ...loan, amount: '45000.00' }, channel: 'direct',
    },
  );
};

const createRoute = (valid: (env: FuzzEnv) => fc.Arbitrary<unknown>): RouteFuzz => ({
  surface: 'api',
  methods: ['POST'],
  request: (env) => valid(env).chain((v) => jsonRequest(['POST'], fc.constant(''), mutatedBody(v), apiHeaders(env, true))),
});

const pollRoute = (prefix: string, ids: (env: FuzzEnv) => string[]): RouteFuzz => ({
  surface: 'api',
  methods: ['GET', 'HEAD'],
  request: (env) => jsonRequest(['GET'], hostileId(ids(env)).map((id) => `${prefix}/${id}`), null, apiHeaders(env, false)),
});

/** A decision's sub-resource (its adverse-action notice): the same hostile ids, below them `suffix`. */
const belowPollRoute = (prefix: string, suffix: string, ids: (env: FuzzEnv) => string[]): RouteFuzz => ({
  surface: 'api',
  methods: ['GET', 'HEAD'],
  request: (env) => jsonRequest(['GET'], hostileId(ids(env)).map((id) => `${prefix}/${id}/${suffix}`), null, apiHeaders(env, false)),
});

const comingSoon = (path: string): Record<string, RouteFuzz> => ({
  [`/v1/decisions/${path}`]: { surface: 'api', methods: ['POST'], request: (env) => jsonRequest(['POST'], fc.constant(`/v1/decisions/${path}`), anyJsonBody, apiHeaders(env, true)) },
  [`/v1/decisions/${path}/:decision_id`]: pollRoute(`/v1/decisions/${path}`, () => []),
});

const eventsQuery = fc
  .record(
    {
      limit: fc.constantFrom('1', '10', '100', '101', '0', '-1', '1.5', '1e2', ''),
      type: fc.constantFrom('decision.finalized', 'decision.finalized,decision.adjusted', 'nope', ',', 'decision.finalized&type=decision.adjusted', 'a'.repeat(3000)),
      created_gte: fc.constantFrom('0', '1769428800', '99999999999', '999999999999', '-1', 'x'),
      created_lt: fc.constantFrom('1', '1769428800', '99999999999'),
      starting_after: fc.oneof(fc.uuid(), fc.constantFrom('x', '..')),
    },
    { requiredKeys: [] },
  )
  .map((q) => {
    const entries = Object.entries(q).map(([k, v]) => `${k}=${k === 'type' ? v : encodeURIComponent(v)}`);
    return entries.length > 0 ? `?${entries.join('&')}` : '';
  });

// ---------------------------------------------------------------------------------------------
// Hosted pages

/** A hosted-page form post: urlencoded (its own content type), sometimes JSON or nothing; right or wrong CSRF. */
function verifyForm(env: FuzzEnv, action: string, fields: fc.Arbitrary<Record<string, string>>): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      token: hostileId(env.verify.tokens),
      method: methodFor(['POST']),
      fields,
      csrf: fc.oneof({ weight: 5, arbitrary: fc.constant(env.verify.csrf) }, { weight: 1, arbitrary: fc.oneof(hostileString, fc.constant('')) }),
      cookie: fc.oneof({ weight: 5, arbitrary: fc.constant(`cds_verify=${env.verify.cookie}`) }, { weight: 1, arbitrary: fc.constantFrom('', 'cds_verify=', `cds_verify=${env.verify.cookie}x`, `cds_verify=a; cds_verify=${env.verify.cookie}`, `__proto__=x; cds_verify=${env.verify.cookie}`) }),
      encoding: fc.constantFrom('form', 'form', 'form', 'form', 'json', 'multipart', 'none', 'form-big', 'form-raw'),
      query: hostileQuery,
    })
    .map((r) => {
      const all: Array<[string, string]> = [['csrf', r.csrf], ...Object.entries(r.fields)];
      let body: Buffer | undefined;
      let contentType: string | undefined;
      if (r.encoding === 'form' || r.encoding === 'form-big' || r.encoding === 'form-raw') {
        contentType = 'application/x-www-form-urlencoded';
        let text = all.map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`).join('&');
        if (r.encoding === 'form-big') text += `&pad=${'p'.repeat(5_000)}`;
        body = Buffer.from(text);
        if (r.encoding === 'form-raw') body = Buffer.concat([body, Buffer.from('&code=%C0%AF&x=\xff', 'latin1')]);
      } else if (r.encoding === 'json') {
        contentType = 'application/json';
        body = Buffer.from(JSON.stringify(Object.fromEntries(all)));
      } else if (r.encoding === 'multipart') {
        contentType = 'multipart/form-data; boundary=fzb';
        body = multipartBody('fzb', all, []);
      }
      return {
        method: r.method,
        url: `/verify/${r.token}/${action}${r.query}`,
        headers: headersOf({ cookie: r.cookie || undefined, 'content-type': contentType }),
        ...(body && r.method !== 'GET' && r.method !== 'HEAD' ? { body } : {}),
        note: `verify ${action} ${r.encoding}`,
      };
    });
}

const formText = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('000000', '111111', '123456', '', '0000000', '00000a') }, { weight: 2, arbitrary: hostileString });

/** A multipart upload: the right CSRF and fields mostly; files of every shape, oversize ones too. */
function verifyUpload(env: FuzzEnv, action: 'document' | 'documents'): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      token: hostileId(env.verify.tokens),
      method: methodFor(['POST']),
      csrf: fc.oneof({ weight: 5, arbitrary: fc.constant(env.verify.csrf) }, { weight: 1, arbitrary: hostileString }),
      field: action === 'document' ? fc.constantFrom('document', 'document', 'doc', '__proto__') : fc.constantFrom('document_bank_statement', 'document_pay_stub', 'document___proto__', 'document_', `document_${'x'.repeat(300)}`, 'document'),
      type: fc.constantFrom('image/jpeg', 'image/png', 'application/pdf', 'text/html', '', 'image/jpeg; charset=utf-8', REFLECTION_MARKER),
      filename: fc.oneof(fc.constantFrom('id.jpg', '../../etc/passwd', 'a"b.jpg', `${REFLECTION_MARKER}.jpg`, ''), hostileString.map((s) => s.slice(0, 200).replace(/["\r\n]/g, ''))),
      bytes: fc.constantFrom(JPEG, Buffer.alloc(0), Buffer.from('%PDF-1.4\n'), Buffer.from('<html>')),
      shape: fc.constantFrom('ok', 'ok', 'ok', 'no-boundary', 'bad-boundary', 'truncated', 'two-files', 'big'),
      cookie: fc.oneof({ weight: 5, arbitrary: fc.constant(`cds_verify=${env.verify.cookie}`) }, { weight: 1, arbitrary: fc.constant('') }),
    })
    .map((r) => {
      const files = [{ name: r.field, filename: r.filename, type: r.type, bytes: r.shape === 'big' ? Buffer.alloc(BODY_LIMIT * 2, 0x41) : r.bytes }];
      if (r.shape === 'two-files') files.push({ ...files[0]!, name: action === 'document' ? 'document' : 'document_pay_stub' });
      let body = multipartBody('fzb', [['csrf', r.csrf]], files);
      if (r.shape === 'truncated') body = body.subarray(0, Math.floor(body.length / 2));
      const contentType = r.shape === 'no-boundary' ? 'multipart/form-data' : r.shape === 'bad-boundary' ? 'multipart/form-data; boundary=other' : 'multipart/form-data; boundary=fzb';
      return {
        method: r.method,
        url: `/verify/${r.token}/${action}`,
        headers: headersOf({ cookie: r.cookie || undefined, 'content-type': contentType }),
        ...(r.method !== 'GET' && r.method !== 'HEAD' ? { body } : {}),
        note: `verify ${action} upload ${r.shape}`,
      };
    });
}

// ---------------------------------------------------------------------------------------------
// Portal

/** Cookie + CSRF header: a signed-in owner mostly; anonymous, none, or a mismatched token sometimes. */
function portalAuth(env: FuzzEnv, signedIn: boolean): fc.Arbitrary<Record<string, string | undefined>> {
  const p = env.portal;
  const right = signedIn ? { cookie: p.sessionCookie, 'x-csrf-token': p.csrf } : { cookie: p.anonymousCookie, 'x-csrf-token': p.anonymousCsrf };
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(right) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<Record<string, string | undefined>>(
        {}, { cookie: p.anonymousCookie, 'x-csrf-token': p.anonymousCsrf }, { cookie: right.cookie, 'x-csrf-token': 'wrong' }, { cookie: right.cookie }, { cookie: 'cds_session=forged; cds_csrf=a', 'x-csrf-token': 'a' },
        { cookie: `__proto__=x; constructor=y; ${right.cookie}`, 'x-csrf-token': right['x-csrf-token'] }, { cookie: `cds_session=${'s'.repeat(5000)}` },
      ),
    },
  );
}

/** Path parameters of portal URLs: the known values, else hostile ones. */
const portalParam = (param: string): fc.Arbitrary<string> => {
  if (param === 'environment') return fc.oneof({ weight: 4, arbitrary: fc.constantFrom('sandbox', 'live') }, { weight: 1, arbitrary: hostileId([]) });
  if (param === 'product') return fc.oneof({ weight: 4, arbitrary: fc.constantFrom('bnpl', 'auto_loan', 'auto-loan') }, { weight: 1, arbitrary: hostileId([]) });
  return hostileId([]);
};

/** A guarded portal route: signed in (or not), hostile params, any JSON body. */
function portalGuarded(pattern: string, methods: string[]): RouteFuzz {
  return {
    surface: 'api',
    methods,
    request: (env) => jsonRequest(methods, fillPath(pattern, portalParam), anyJsonBody, portalAuth(env, true)),
  };
}

function portalPublic(url: string, valid: (env: FuzzEnv) => unknown): RouteFuzz {
  return { surface: 'api', methods: ['POST'], request: (env) => jsonRequest(['POST'], fc.constant(url), mutatedBody(valid(env)), portalAuth(env, false)) };
}

// ---------------------------------------------------------------------------------------------
// Static surfaces

const staticPath = fc.oneof(
  fc.constantFrom('', 'index.html', 'assets/app.js', 'api', 'api/x', '..', '../package.json', '%2e%2e/%2e%2e/etc/passwd', 'a%2Fb', 'x.md', 'webhooks.md', 'api-reference', 'assets/', 'assets/../../x', '__proto__', 'constructor', '%00', '%zz'),
  hostileId([]),
);

function staticRoute(pattern: string): RouteFuzz {
  return {
    surface: 'static',
    methods: ['GET', 'HEAD'],
    request: () =>
      fc.record({ method: methodFor(['GET']), url: fillPath(pattern, () => staticPath), query: hostileQuery, accept: fc.constantFrom(undefined, 'text/html', 'application/json', '*/*') }).map((r) => ({
        method: r.method,
        url: r.url + r.query,
        headers: headersOf({ accept: r.accept }),
        note: 'static',
      })),
  };
}

function openRoute(url: string): RouteFuzz {
  return {
    surface: 'api',
    methods: ['GET', 'HEAD'],
    request: () =>
      fc.record({ method: methodFor(['GET']), query: hostileQuery, body: fc.option(anyJsonBody), ct: jsonContentType }).map((r) => ({
        method: r.method,
        url: url + r.query,
        headers: headersOf({ 'content-type': r.body && r.method !== 'GET' && r.method !== 'HEAD' ? r.ct : undefined }),
        ...(r.body && r.method !== 'GET' && r.method !== 'HEAD' ? { body: r.body.body } : {}),
        note: 'open route',
      })),
  };
}

// ---------------------------------------------------------------------------------------------
// The catalogue

export const ROUTE_CATALOGUE: Record<string, RouteFuzz> = {
  '/healthz': openRoute('/healthz'),
  '/readyz': openRoute('/readyz'),
  '/v1/openapi.json': openRoute('/v1/openapi.json'),

  '/v1/decisions/bnpl': { ...createRoute(bnplValid), request: (env) => bnplValid(env).chain((v) => jsonRequest(['POST'], fc.constant('/v1/decisions/bnpl'), mutatedBody(v), apiHeaders(env, true))) },
  '/v1/decisions/bnpl/:decision_id': pollRoute('/v1/decisions/bnpl', (env) => env.bnplDecisionIds),
  '/v1/decisions/auto-loan': { ...createRoute(autoLoanValid), request: (env) => autoLoanValid(env).chain((v) => jsonRequest(['POST'], fc.constant('/v1/decisions/auto-loan'), mutatedBody(v), apiHeaders(env, true))) },
  '/v1/decisions/auto-loan/:decision_id': pollRoute('/v1/decisions/auto-loan', (env) => env.autoLoanDecisionIds),
  '/v1/decisions/bnpl/:decision_id/adverse-action-notice': belowPollRoute('/v1/decisions/bnpl', 'adverse-action-notice', (env) => env.bnplDecisionIds),
  '/v1/decisions/auto-loan/:decision_id/adverse-action-notice': belowPollRoute('/v1/decisions/auto-loan', 'adverse-action-notice', (env) => env.autoLoanDecisionIds),
  ...comingSoon('mortgage'),
  ...comingSoon('personal-loan'),
  ...comingSoon('credit-card'),
  '/v1/sandbox/decisions/:decision_id/verification': {
    surface: 'api',
    methods: ['POST'],
    request: (env) =>
      fc
        .tuple(hostileId(env.pendingDecisionIds), fc.constantFrom('pass', 'fail'))
        .chain(([id, result]) => jsonRequest(['POST'], fc.constant(`/v1/sandbox/decisions/${id}/verification`), mutatedBody({ result }), apiHeaders(env, true))),
  },
  '/v1/events': {
    surface: 'api',
    methods: ['GET', 'HEAD'],
    request: (env) => fc.tuple(eventsQuery, jsonRequest(['GET'], fc.constant('/v1/events'), null, apiHeaders(env, false))).map(([q, r]) => (r.url === '/v1/events' ? { ...r, url: r.url + q } : r)),
  },
  '/v1/events/:event_id': pollRoute('/v1/events', (env) => env.eventIds),

  '/verify/assets/verify.css': staticRoute('/verify/assets/verify.css'),
  '/verify/:token': {
    surface: 'hosted',
    methods: ['GET', 'HEAD'],
    request: (env) =>
      fc.record({ token: hostileId(env.verify.tokens), method: methodFor(['GET']), query: hostileQuery }).map((r) => ({ method: r.method, url: `/verify/${r.token}${r.query}`, headers: {}, note: 'verify page' })),
  },
  '/verify/:token/send-code': { surface: 'hosted', methods: ['POST'], request: (env) => verifyForm(env, 'send-code', fc.constant({})) },
  '/verify/:token/code': { surface: 'hosted', methods: ['POST'], request: (env) => verifyForm(env, 'code', fc.record({ code: formText })) },
  '/verify/:token/identity': {
    surface: 'hosted',
    methods: ['POST'],
    request: (env) =>
      verifyForm(env, 'identity', fc.record({ ssn_last4: fc.oneof(fc.constant(env.pii.ssnLast4), formText), dob: fc.oneof(fc.constant(env.pii.dob), fc.constantFrom('1985-02-30', '0000-00-00', '9999-12-31'), hostileString) })),
  },
  '/verify/:token/document': { surface: 'hosted', methods: ['POST'], request: (env) => verifyUpload(env, 'document') },
  '/verify/:token/documents': { surface: 'hosted', methods: ['POST'], request: (env) => verifyUpload(env, 'documents') },

  '/portal': staticRoute('/portal'),
  '/portal/*': staticRoute('/portal/*'),
  '/docs': staticRoute('/docs'),
  '/docs/*': staticRoute('/docs/*'),

  '/portal/api/session': { surface: 'api', methods: ['GET', 'HEAD'], request: (env) => jsonRequest(['GET'], fc.constant('/portal/api/session'), null, portalAuth(env, true)) },
  '/portal/api/signup': portalPublic('/portal/api/signup', (env) => ({ company_name: 'Fuzz Lending', name: `${env.pii.firstName} ${env.pii.lastName}`, email: env.pii.email, password: 'correct horse battery staple' })),
  '/portal/api/login': portalPublic('/portal/api/login', (env) => ({ email: env.portal.email, password: env.portal.password })),
  '/portal/api/invitation-links/lookup': portalPublic('/portal/api/invitation-links/lookup', () => ({ token: 'inv_0123456789abcdef' })),
  '/portal/api/invitation-links/accept': portalPublic('/portal/api/invitation-links/accept', (env) => ({ token: 'inv_0123456789abcdef', name: env.pii.firstName, password: 'correct horse battery staple' })),
  // Sign-out with a working session would end the suite's own session: fuzzed without one.
  '/portal/api/logout': { surface: 'api', methods: ['POST'], request: (env) => jsonRequest(['POST'], fc.constant('/portal/api/logout'), anyJsonBody, portalAuth(env, false)) },
  // Likewise a password change, which could change the suite's own password.
  '/portal/api/account/password': { surface: 'api', methods: ['POST'], request: (env) => jsonRequest(['POST'], fc.constant('/portal/api/account/password'), anyJsonBody, portalAuth(env, false)) },
  '/portal/api/password-reset-links/lookup': portalPublic('/portal/api/password-reset-links/lookup', () => ({ token: 'rst_0123456789abcdef' })),
  '/portal/api/password-reset-links/accept': portalPublic('/portal/api/password-reset-links/accept', () => ({ token: 'rst_0123456789abcdef', password: 'correct horse battery staple' })),

  '/portal/api/sandbox/consumers': portalGuarded('/portal/api/sandbox/consumers', ['GET', 'HEAD']),
  '/portal/api/sandbox/consumers/:id': portalGuarded('/portal/api/sandbox/consumers/:id', ['GET', 'HEAD']),
  '/portal/api/sandbox/consumers/:id/applications': portalGuarded('/portal/api/sandbox/consumers/:id/applications', ['GET', 'HEAD']),
  '/portal/api/sandbox/consumers/:id/reset': portalGuarded('/portal/api/sandbox/consumers/:id/reset', ['POST']),
  '/portal/api/invitations': portalGuarded('/portal/api/invitations', ['GET', 'HEAD', 'POST']),
  '/portal/api/invitations/:id': portalGuarded('/portal/api/invitations/:id', ['DELETE']),
  '/portal/api/users': portalGuarded('/portal/api/users', ['GET', 'HEAD']),
  '/portal/api/users/:id': portalGuarded('/portal/api/users/:id', ['PATCH', 'DELETE']),
  '/portal/api/users/:id/password-reset': portalGuarded('/portal/api/users/:id/password-reset', ['POST']),
  '/portal/api/api-keys': portalGuarded('/portal/api/api-keys', ['GET', 'HEAD', 'POST']),
  '/portal/api/api-keys/:id/revoke': portalGuarded('/portal/api/api-keys/:id/revoke', ['POST']),
  '/portal/api/webhooks/event-types': portalGuarded('/portal/api/webhooks/event-types', ['GET', 'HEAD']),
  '/portal/api/webhooks/:environment/endpoints': portalGuarded('/portal/api/webhooks/:environment/endpoints', ['GET', 'HEAD', 'POST']),
  '/portal/api/webhooks/:environment/endpoints/:id': portalGuarded('/portal/api/webhooks/:environment/endpoints/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']),
  '/portal/api/webhooks/:environment/endpoints/:id/test': portalGuarded('/portal/api/webhooks/:environment/endpoints/:id/test', ['POST']),
  '/portal/api/webhooks/:environment/endpoints/:id/rotate-secret': portalGuarded('/portal/api/webhooks/:environment/endpoints/:id/rotate-secret', ['POST']),
  '/portal/api/webhooks/:environment/endpoints/:id/reenable': portalGuarded('/portal/api/webhooks/:environment/endpoints/:id/reenable', ['POST']),
  '/portal/api/webhooks/:environment/endpoints/:id/resend-failed': portalGuarded('/portal/api/webhooks/:environment/endpoints/:id/resend-failed', ['POST']),
  '/portal/api/webhooks/:environment/endpoints/:id/deliveries': portalGuarded('/portal/api/webhooks/:environment/endpoints/:id/deliveries', ['GET', 'HEAD']),
  '/portal/api/webhooks/:environment/deliveries/:deliveryId/attempts': portalGuarded('/portal/api/webhooks/:environment/deliveries/:deliveryId/attempts', ['GET', 'HEAD']),
  '/portal/api/webhooks/:environment/deliveries/:deliveryId/resend': portalGuarded('/portal/api/webhooks/:environment/deliveries/:deliveryId/resend', ['POST']),
  '/portal/api/dealers/:environment/dealers': portalGuarded('/portal/api/dealers/:environment/dealers', ['GET', 'HEAD', 'POST']),
  '/portal/api/dealers/:environment/dealers/:id': portalGuarded('/portal/api/dealers/:environment/dealers/:id', ['GET', 'HEAD', 'PATCH']),
  '/portal/api/dealers/:environment/dealers/:id/disable': portalGuarded('/portal/api/dealers/:environment/dealers/:id/disable', ['POST']),
  '/portal/api/dealers/:environment/dealers/:id/enable': portalGuarded('/portal/api/dealers/:environment/dealers/:id/enable', ['POST']),
  '/portal/api/decisions/:environment': portalGuarded('/portal/api/decisions/:environment', ['GET', 'HEAD']),
  '/portal/api/decisions/:environment/export.csv': portalGuarded('/portal/api/decisions/:environment/export.csv', ['GET', 'HEAD']),
  '/portal/api/decisions/:environment/:id': portalGuarded('/portal/api/decisions/:environment/:id', ['GET', 'HEAD']),
  '/portal/api/decisions/:environment/:id/adverse-action-notice': portalGuarded('/portal/api/decisions/:environment/:id/adverse-action-notice', ['POST']),
  '/portal/api/settings/notices': portalGuarded('/portal/api/settings/notices', ['GET', 'HEAD', 'PUT']),
  '/portal/api/dashboard/:environment': portalGuarded('/portal/api/dashboard/:environment', ['GET', 'HEAD']),
  '/portal/api/policy/:environment': portalGuarded('/portal/api/policy/:environment', ['GET', 'HEAD']),
  '/portal/api/policy/:environment/:product/versions': portalGuarded('/portal/api/policy/:environment/:product/versions', ['GET', 'HEAD', 'POST']),
  '/portal/api/policy/:environment/:product/versions/:id': portalGuarded('/portal/api/policy/:environment/:product/versions/:id', ['GET', 'HEAD']),
  '/portal/api/policy/:environment/:product/versions/:id/test': portalGuarded('/portal/api/policy/:environment/:product/versions/:id/test', ['POST']),
  '/portal/api/policy/:environment/:product/versions/:id/promote': portalGuarded('/portal/api/policy/:environment/:product/versions/:id/promote', ['POST']),
  '/portal/api/policy/:environment/:product/validate': portalGuarded('/portal/api/policy/:environment/:product/validate', ['POST']),
  '/portal/api/policy/:environment/:product/current': portalGuarded('/portal/api/policy/:environment/:product/current', ['GET', 'HEAD']),
  '/portal/api/referrals/catalogue': portalGuarded('/portal/api/referrals/catalogue', ['GET', 'HEAD']),
  '/portal/api/referrals/:environment': portalGuarded('/portal/api/referrals/:environment', ['GET', 'HEAD']),
  '/portal/api/referrals/:environment/:id': portalGuarded('/portal/api/referrals/:environment/:id', ['GET', 'HEAD']),
  '/portal/api/referrals/:environment/:id/reveal': portalGuarded('/portal/api/referrals/:environment/:id/reveal', ['POST']),
  '/portal/api/referrals/:environment/:id/approve': portalGuarded('/portal/api/referrals/:environment/:id/approve', ['POST']),
  '/portal/api/referrals/:environment/:id/decline': portalGuarded('/portal/api/referrals/:environment/:id/decline', ['POST']),
  '/portal/api/referrals/:environment/:id/document-requests': portalGuarded('/portal/api/referrals/:environment/:id/document-requests', ['POST']),
  '/portal/api/referrals/:environment/:id/conditions': portalGuarded('/portal/api/referrals/:environment/:id/conditions', ['POST']),
  '/portal/api/verification-review/:environment': portalGuarded('/portal/api/verification-review/:environment', ['GET', 'HEAD']),
  '/portal/api/verification-review/:environment/documents/:documentId': portalGuarded('/portal/api/verification-review/:environment/documents/:documentId', ['GET', 'HEAD']),
  '/portal/api/verification-review/:environment/:decisionId/review': portalGuarded('/portal/api/verification-review/:environment/:decisionId/review', ['POST']),
};

/** The surface of any URL actually requested (a fuzzed path may land on another route). */
export function surfaceOf(url: string): Surface {
  const path = url.split('?')[0]!;
  if (path.startsWith('/verify/assets/')) return 'static';
  if (path.startsWith('/verify/') || path === '/verify') return 'hosted';
  if (path.startsWith('/portal/api/') || path === '/portal/api') return 'api';
  if (path === '/portal' || path.startsWith('/portal/') || path === '/docs' || path.startsWith('/docs/')) return 'static';
  return 'api';
}
