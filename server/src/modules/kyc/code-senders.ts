/**
 * How one-time codes leave the service (live only; the sandbox sends nothing).
 *
 * SMS goes to an HTTP SMS gateway (SMS_GATEWAY_URL) with this JSON contract:
 *   POST {SMS_GATEWAY_URL}
 *   Authorization: Bearer {SMS_GATEWAY_TOKEN}      (when set)
 *   Content-Type: application/json
 *   {"to": "+14155550123", "message": "...", "reference": "<opaque id, the same on a retry>"}
 *   -> any 2xx means accepted; anything else, or no answer within 5 s, is a failure.
 * Email goes through SMTP (SMTP_URL, SMTP_FROM) with nodemailer; a server that does not connect,
 * greet or answer a command within 5 s is a failure (nodemailer's own waits are 30 s to 10 minutes,
 * and the consumer's page waits for the send). A consumer with a phone gets SMS, otherwise email.
 * A failure is reported to the page ("we couldn't send a code, try again"), logged without the
 * destination, and never consumes one of the consumer's tries.
 */
import { createRequire } from 'node:module';
import type nodemailerModule from 'nodemailer';
import type * as nodemailerShared from 'nodemailer/lib/shared/index.js';
import type { Config } from '../../config/config.js';

export interface CodeMessage {
  channel: 'sms' | 'email';
  /** Phone (E.164) or email address. PII: never logged. */
  to: string;
  code: string;
  merchantName: string;
  validMinutes: number;
  reference: string;
}

export interface CodeSender {
  /** Resolves when the provider accepted the message; rejects otherwise. */
  send(message: CodeMessage): Promise<void>;
  close(): void;
}

export class CodeDeliveryError extends Error {
  override readonly name = 'CodeDeliveryError';
}

export function codeText(m: CodeMessage): string {
  return `${m.code} is your verification code for your purchase at ${m.merchantName}. It expires in ${m.validMinutes} minutes. Never share it.`;
}

/** How long a provider may take to answer (SMS: the whole request; SMTP: connecting, the greeting, each reply). */
export const CODE_SEND_TIMEOUT_MS = 5_000;

/**
 * nodemailer's transport for SMTP_URL with our time-outs. createTransport() keeps only what it
 * parses from a `url` and drops every other option given beside it, so the URL is parsed here
 * with nodemailer's own parser (query options such as `?pool=true` included) and the time-outs
 * are added to the result.
 */
function smtpTransport(url: string) {
  const require = createRequire(import.meta.url);
  const nodemailer = require('nodemailer') as typeof nodemailerModule;
  const { parseConnectionUrl } = require('nodemailer/lib/shared') as typeof nodemailerShared;
  return nodemailer.createTransport({
    ...parseConnectionUrl(url),
    connectionTimeout: CODE_SEND_TIMEOUT_MS,
    greetingTimeout: CODE_SEND_TIMEOUT_MS,
    socketTimeout: CODE_SEND_TIMEOUT_MS,
  });
}

export function createLiveCodeSender(config: Pick<Config, 'smtp' | 'smsGateway'>): CodeSender {
  // Loaded only when SMTP is configured: most processes never send email, and start faster without it.
  const transport = config.smtp ? smtpTransport(config.smtp.url) : null;
  return {
    async send(message) {
      if (message.channel === 'sms') {
        if (!config.smsGateway) throw new CodeDeliveryError('no SMS gateway configured (SMS_GATEWAY_URL)');
        const response = await fetch(config.smsGateway.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(config.smsGateway.token ? { authorization: `Bearer ${config.smsGateway.token}` } : {}),
          },
          body: JSON.stringify({ to: message.to, message: codeText(message), reference: message.reference }),
          signal: AbortSignal.timeout(CODE_SEND_TIMEOUT_MS),
        }).catch((err: unknown) => {
          throw new CodeDeliveryError(`SMS gateway unreachable: ${err instanceof Error ? err.name : 'error'}`);
        });
        if (!response.ok) throw new CodeDeliveryError(`SMS gateway answered ${response.status}`);
        return;
      }
      if (!transport || !config.smtp) throw new CodeDeliveryError('no SMTP server configured (SMTP_URL)');
      try {
        await transport.sendMail({
          from: config.smtp.from,
          to: message.to,
          subject: `Your verification code: ${message.code}`,
          text: codeText(message),
          headers: { 'X-Reference': message.reference },
        });
      } catch (err) {
        throw new CodeDeliveryError(`SMTP delivery failed: ${err instanceof Error ? err.name : 'error'}`);
      }
    },
    close() {
      transport?.close();
    },
  };
}
