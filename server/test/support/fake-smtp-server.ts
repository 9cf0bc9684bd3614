/**
 * A fake mail server: a real SMTP server (the `smtp-server` package) on 127.0.0.1, plain text, no
 * authentication and no STARTTLS, so nodemailer delivers to it exactly as to a real relay. Every
 * message is recorded with its envelope, headers and decoded text body, and the 6-digit code is
 * parsed out of the body. `setFailing(true)` makes it refuse messages (550) so a test can see a
 * delivery failure; `setHanging(true)` makes it accept connections and never greet them (a server
 * that hangs), until `setHanging(false)` or stop().
 */
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { codeIn, waitFor } from './fake-sms-gateway.js';

export interface MailMessage {
  from: string;
  to: string[];
  subject: string;
  headers: Record<string, string>;
  /** The text body, transfer-decoded (quoted-printable or base64). */
  text: string;
  /** The 6-digit code in the body (null when there is none). */
  code: string | null;
  raw: string;
}

export interface FakeSmtpServer {
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  url: string;
  messages: MailMessage[];
  setFailing(failing: boolean): void;
  setHanging(hanging: boolean): void;
  /** Connections held without a greeting while hanging. */
  hung: number;
  /** Messages refused while failing. */
  refused: number;
  /**
   * The first recorded message at index >= `since` (default 0) whose recipients include `to` (any
   * when omitted), waiting up to `timeoutMs` (default 5 s). Rejects with a clear message on timeout.
   */
  waitForMessage(options?: { since?: number; to?: string; timeoutMs?: number }): Promise<MailMessage>;
  stop(): Promise<void>;
}

export async function startFakeSmtpServer(): Promise<FakeSmtpServer> {
  const messages: MailMessage[] = [];
  const waiters = new Set<() => void>();
  let failing = false;
  let refused = 0;
  let hanging = false;
  let hung = 0;
  // Greetings held back while hanging: given on setHanging(false), refused on stop().
  const held = new Set<(err?: Error | null) => void>();

  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 1_000,
    onConnect(_session, callback) {
      if (!hanging) return callback();
      hung++;
      held.add(callback);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (failing) {
          refused++;
          const err = new Error('mailbox unavailable') as Error & { responseCode: number };
          err.responseCode = 550;
          return callback(err);
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = parseMessage(raw);
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          ...parsed,
          code: codeIn(parsed.text),
          raw,
        });
        for (const wake of [...waiters]) wake();
        callback();
      });
    },
  });
  const listening = await new Promise<ReturnType<SMTPServer['listen']>>((resolve, reject) => {
    server.on('error', reject);
    const net = server.listen(0, '127.0.0.1', () => resolve(net));
  });
  const { port } = (listening as { address(): AddressInfo }).address();

  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    get refused() {
      return refused;
    },
    setFailing(value) {
      failing = value;
    },
    get hung() {
      return hung;
    },
    setHanging(value) {
      hanging = value;
      if (!value) {
        for (const greet of [...held]) greet();
        held.clear();
      }
    },
    waitForMessage({ since = 0, to, timeoutMs = 5_000 } = {}) {
      const find = () => messages.slice(since).find((m) => to === undefined || m.to.includes(to));
      return waitFor(find, waiters, timeoutMs, () => `no email${to ? ` to ${to}` : ''} after index ${since} within ${timeoutMs} ms (received ${messages.length})`);
    },
    stop() {
      for (const refuse of [...held]) refuse(new Error('stopping'));
      held.clear();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Just enough RFC 5322/MIME to read a single-part text message as nodemailer writes it. */
function parseMessage(raw: string): { subject: string; headers: Record<string, string>; text: string } {
  const split = raw.search(/\r?\n\r?\n/);
  const head = split === -1 ? raw : raw.slice(0, split);
  const body = split === -1 ? '' : raw.slice(split).replace(/^\r?\n\r?\n/, '');
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const encoding = (headers['content-transfer-encoding'] ?? '7bit').toLowerCase();
  let text = body;
  if (encoding === 'quoted-printable') {
    text = Buffer.from(
      body.replace(/=\r?\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
      'latin1',
    ).toString('utf8');
  } else if (encoding === 'base64') {
    text = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  }
  return { subject: headers.subject ?? '', headers, text: text.replace(/\r\n/g, '\n').trim() };
}
