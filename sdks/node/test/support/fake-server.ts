/**
 * A scripted HTTP server on 127.0.0.1 for transport tests: each incoming request takes the next
 * step of the script (the last step repeats). A step answers with a status, headers and body
 * (optionally after a delay), drops the connection, never answers, or sends headers and then
 * stalls the body. Every request is recorded with its arrival time.
 */
import http from 'node:http';
import type net from 'node:net';

export type Step =
  | { status: number; headers?: Record<string, string>; body?: unknown; delayMs?: number }
  | 'drop'
  | 'hang'
  | 'stall-body';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface FakeServer {
  baseUrl: string;
  requests: RecordedRequest[];
  /** Replace the script (and clear recorded requests). */
  script(steps: Step[]): void;
  close(): Promise<void>;
}

export const errorBody = (error: string, message = `fake ${error}`) => ({ error, message, request_id: 'req_fake0000000000000000' });

export const pendingDecision = (id: string) => ({
  decision_id: id,
  application_id: id,
  status: 'needs_consumer_action',
  kyc_tier: 'enhanced',
  kyc_status: 'pending',
  outcome: null,
  consumer_complete_url: 'http://127.0.0.1/verify/x',
  polling_url: `/v1/decisions/bnpl/${id}`,
  estimated_completion_seconds: 120,
  expires_at: '2030-01-01T00:00:00.000Z',
});

export const declinedDecision = (id: string) => ({
  decision_id: id,
  application_id: id,
  status: 'complete',
  outcome: 'declined',
  decline_reasons: [{ code: 'AA-21', reason: 'Bankruptcy' }],
});

export async function startFakeServer(initial: Step[] = []): Promise<FakeServer> {
  let steps = initial;
  let index = 0;
  const requests: RecordedRequest[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const step = steps[Math.min(index, steps.length - 1)] ?? { status: 500, body: errorBody('internal_error') };
      index += 1;
      if (step === 'drop') {
        req.socket.destroy();
        return;
      }
      if (step === 'hang') return;
      if (step === 'stall-body') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"decision_id":');
        return;
      }
      const send = () => {
        const text = typeof step.body === 'string' ? step.body : JSON.stringify(step.body ?? {});
        res.writeHead(step.status, { 'content-type': 'application/json', 'request-id': 'req_fake0000000000000000', ...step.headers });
        res.end(text);
      };
      if (step.delayMs) setTimeout(send, step.delayMs);
      else send();
    });
  });
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    script(next) {
      steps = next;
      index = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
