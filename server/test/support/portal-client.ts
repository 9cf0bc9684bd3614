/**
 * A browser-like client of the portal API for integration tests: keeps cookies (a tiny jar that
 * honours Max-Age=0), sends the CSRF header the web app sends, speaks JSON through `inject()`.
 */
import type { FastifyInstance } from 'fastify';
import type { Response as InjectResponse } from 'light-my-request';

export interface PortalResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, unknown>;
  setCookies: string[];
  raw: InjectResponse;
}

export class PortalClient {
  readonly cookies = new Map<string, string>();
  csrf = '';
  constructor(private readonly app: FastifyInstance) {}

  async request(method: string, url: string, body?: unknown, options: { csrf?: string | null; ip?: string } = {}): Promise<PortalResponse> {
    const headers: Record<string, string> = {};
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const csrf = options.csrf === undefined ? this.csrf : options.csrf;
    if (method !== 'GET' && csrf !== null && csrf !== '') headers['x-csrf-token'] = csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const raw = await this.app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
      ...(options.ip ? { remoteAddress: options.ip } : {}),
    });
    const setCookie = raw.headers['set-cookie'];
    const setCookies = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [String(setCookie)];
    for (const c of setCookies) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/max-age=0/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    let parsed: Record<string, unknown> = {};
    if (raw.body && String(raw.headers['content-type'] ?? '').includes('json')) parsed = raw.json();
    if (typeof parsed.csrf_token === 'string') this.csrf = parsed.csrf_token;
    return { status: raw.statusCode, body: parsed, headers: raw.headers, setCookies, raw };
  }

  get(url: string) {
    return this.request('GET', url);
  }
  post(url: string, body: unknown = {}, options: { csrf?: string | null; ip?: string } = {}) {
    return this.request('POST', url, body, options);
  }
  patch(url: string, body: unknown) {
    return this.request('PATCH', url, body);
  }

  put(url: string, body: unknown) {
    return this.request('PUT', url, body);
  }
  delete(url: string) {
    return this.request('DELETE', url);
  }

  /** The anonymous CSRF token first (as the web app does on load), then sign-up (from `ip`: sign-ups are limited per address). */
  async signUp(input: { company: string; name?: string; email: string; password?: string; ip?: string }): Promise<PortalResponse> {
    await this.get('/portal/api/session');
    return this.post(
      '/portal/api/signup',
      { company_name: input.company, name: input.name ?? 'Alex Admin', email: input.email, password: input.password ?? 'correct horse battery' },
      input.ip ? { ip: input.ip } : {},
    );
  }

  /**
   * From this (admin) session, invites `email` as `role`; the invitee accepts in a client of its
   * own, which is then signed in as the new member.
   */
  async invite(role: string, email: string, options: { name?: string; password?: string; ip?: string } = {}): Promise<{ member: PortalClient; accepted: PortalResponse }> {
    const invite = await this.post('/portal/api/invitations', { email, role });
    const member = new PortalClient(this.app);
    await member.get('/portal/api/session');
    const token = String(invite.body.invite_url).split('#')[1];
    const accepted = await member.post('/portal/api/invitation-links/accept', { token, name: options.name ?? `${role} person`, password: options.password ?? 'another long passphrase' }, options.ip ? { ip: options.ip } : {});
    return { member, accepted };
  }

  async login(email: string, password = 'correct horse battery', ip?: string): Promise<PortalResponse> {
    if (!this.csrf) await this.get('/portal/api/session');
    return this.post('/portal/api/login', { email, password }, ip ? { ip } : {});
  }
}
