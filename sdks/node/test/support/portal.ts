/**
 * Dealers live in the lender portal, not in `/v1` (decisions.md section 11), so the auto-loan tests
 * set up their tenant as a lender does: sign up in the portal (which provisions the sandbox with its
 * seeded consumers and shows the sandbox key once), then add dealers there and disable one. This is
 * a small cookie-keeping client of the portal's JSON API (`/portal/api`), sending the CSRF header
 * the web app sends.
 */
export interface PortalDealer {
  id: string;
  environment: 'sandbox' | 'live';
  name: string;
  license_number: string | null;
  state: string | null;
  status: 'active' | 'disabled';
  created_at: string;
  updated_at: string;
  disabled_at: string | null;
}

export class PortalSession {
  private readonly cookies = new Map<string, string>();
  private csrf = '';
  constructor(private readonly baseUrl: string) {}

  async request<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET') headers['x-csrf-token'] = this.csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.baseUrl}/portal/api${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
    const text = await response.text();
    const parsed = (text ? JSON.parse(text) : {}) as T & { csrf_token?: unknown };
    if (typeof parsed.csrf_token === 'string') this.csrf = parsed.csrf_token;
    return { status: response.status, body: parsed };
  }

  private async ok<T>(method: string, path: string, body?: unknown): Promise<T> {
    const r = await this.request<T>(method, path, body);
    if (r.status >= 300) throw new Error(`${method} /portal/api${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  addDealer(input: { name: string; license_number?: string | null; state?: string | null }): Promise<PortalDealer> {
    return this.ok<PortalDealer>('POST', '/dealers/sandbox/dealers', input);
  }

  disableDealer(id: string): Promise<PortalDealer> {
    return this.ok<PortalDealer>('POST', `/dealers/sandbox/dealers/${id}/disable`, {});
  }

  async signUp(company: string, email: string): Promise<{ sandboxKey: string; consumers: { soft: string; enhanced: string; hard: string } }> {
    await this.ok('GET', '/session');
    const signedUp = await this.ok<{ sandbox_api_key: string }>('POST', '/signup', { company_name: company, name: 'Sam Integrator', email, password: 'a long sandbox passphrase' });
    const seeded = await this.ok<{ data: Array<{ id: string; tier: 'soft' | 'enhanced' | 'hard' }> }>('GET', '/sandbox/consumers?seeded=true');
    const tier = (t: string) => seeded.data.find((c) => c.tier === t)!.id;
    return { sandboxKey: signedUp.sandbox_api_key, consumers: { soft: tier('soft'), enhanced: tier('enhanced'), hard: tier('hard') } };
  }
}

export interface AutoLoanTenant {
  sandboxKey: string;
  consumers: { soft: string; enhanced: string; hard: string };
  activeDealer: PortalDealer;
  disabledDealer: PortalDealer;
  portal: PortalSession;
}

/** A tenant signed up in the portal with two dealers in its sandbox: one active, one disabled. */
export async function autoLoanTenant(baseUrl: string, label: string): Promise<AutoLoanTenant> {
  const portal = new PortalSession(baseUrl);
  const { sandboxKey, consumers } = await portal.signUp(`${label} Auto Finance`, `${label.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@auto-finance.example.com`);
  const activeDealer = await portal.addDealer({ name: 'Lone Star Motors', license_number: 'TX-DLR-20417', state: 'TX' });
  const disabled = await portal.addDealer({ name: 'Closed Lot Cars', state: 'OK' });
  const disabledDealer = await portal.disableDealer(disabled.id);
  return { sandboxKey, consumers, activeDealer, disabledDealer, portal };
}

/** A 17-character VIN with its check digit (position 9) computed as 49 CFR 565 says. */
export function vin(withoutCheckDigit: string): string {
  const values: Record<string, number> = { A: 1, B: 2, C: 3, D: 4, E: 5, F: 6, G: 7, H: 8, J: 1, K: 2, L: 3, M: 4, N: 5, P: 7, R: 9, S: 2, T: 3, U: 4, V: 5, W: 6, X: 7, Y: 8, Z: 9 };
  const weights = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];
  const chars = withoutCheckDigit.toUpperCase();
  if (chars.length !== 17) throw new Error('vin(): pass 17 characters (position 9 is replaced)');
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += (/\d/.test(chars[i]!) ? Number(chars[i]) : values[chars[i]!]!) * weights[i]!;
  const check = sum % 11 === 10 ? 'X' : String(sum % 11);
  return chars.slice(0, 8) + check + chars.slice(9);
}
