/**
 * When the service counts as served over HTTPS, and the one Strict-Transport-Security value.
 *
 * HTTPS means either the process terminates TLS itself (TLS_CERT_FILE/TLS_KEY_FILE) or it sits
 * behind a TLS-terminating proxy and says so through an https PUBLIC_BASE_URL (the address every
 * link and cookie is built on). Then every response carries HSTS and cookies are Secure. A plain
 * http deployment (the embedded default, local development) sends no HSTS: a browser ignores it
 * over plain HTTP anyway, and pinning HTTPS on a host that has none would lock users out.
 */
import type { Config } from '../config/config.js';

/** One year, subdomains included (RFC 6797); no `preload`: that is the operator's choice to make. */
export const HSTS_VALUE = 'max-age=31536000; includeSubDomains';

export function servedOverHttps(config: Pick<Config, 'publicBaseUrl' | 'tls'>): boolean {
  return config.tls !== null || config.publicBaseUrl.startsWith('https://');
}
