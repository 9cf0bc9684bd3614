/**
 * The hosted pages' links, `{public_base_url}/verify/{token}`: a consumer's verification link
 * (`consumer_complete_url`) and an underwriter's document-request upload link share the address.
 * Whoever holds one can use it, so the portal shows it masked to anyone who does not pass it on.
 */

export function verifyLink(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/verify/${token}`;
}

/** The link with its token hidden: `https://…/verify/••••`. */
export function maskVerifyLink(url: string): string {
  return url.replace(/\/verify\/[^/?#]+$/, '/verify/••••');
}
