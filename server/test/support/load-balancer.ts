/**
 * A loopback round-robin HTTP load balancer for multi-node tests, standing where nginx or a cloud
 * balancer stands in production.
 *
 * Routing is per request, never per connection: each request the balancer receives goes to the
 * next backend in turn over a fresh upstream connection (`Connection: close`, no agent), so a
 * keep-alive client is still spread over every node and nothing sticks. Each routed request is
 * recorded (backend, method, path, status), and the response carries `X-Upstream: <index>`.
 *
 * Failures, as nginx's `proxy_next_upstream error` handles them: a backend that refuses the
 * connection never saw the request, so the balancer tries the next backend (each at most once per
 * request); a backend that fails after the request was sent (reset, process killed) may have acted
 * on it, so the client gets 502 and decides whether to retry (with its Idempotency-Key).
 */
import http from 'node:http';
import type net from 'node:net';

export interface RoutedRequest {
  /** Index of the backend in the list given to startLoadBalancer. */
  backend: number;
  method: string;
  path: string;
  /** Upstream status; 502 when the backend failed after the request was sent. */
  status: number;
  /** Backends that refused the connection before this one took the request. */
  refusedBy: number[];
  /** Position in the order requests were routed (0, 1, 2...). */
  seq: number;
}

export interface LoadBalancer {
  /** `http://127.0.0.1:PORT` */
  baseUrl: string;
  port: number;
  /** Every request routed so far, in routing order. */
  routed: RoutedRequest[];
  /** Requests answered per backend (refusals not counted). */
  servedBy(backend: number): number;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

export async function startLoadBalancer(backendPorts: number[], host = '127.0.0.1'): Promise<LoadBalancer> {
  if (backendPorts.length === 0) throw new Error('a load balancer needs at least one backend');
  const routed: RoutedRequest[] = [];
  const sockets = new Set<net.Socket>();
  let next = 0;
  let seq = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const first = next;
      next = (next + 1) % backendPorts.length;
      forward(req, res, body, first, []);
    });
  });

  function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, backend: number, refusedBy: number[]): void {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name) && value !== undefined) headers[name] = value;
    headers.connection = 'close';
    headers['content-length'] = String(body.length);
    headers['x-forwarded-for'] = req.socket.remoteAddress ?? '127.0.0.1';
    let sent = false;
    const upstream = http.request(
      { host, port: backendPorts[backend], method: req.method, path: req.url, headers, agent: false },
      (up) => {
        const out: http.OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(up.headers)) if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
        out['x-upstream'] = String(backend);
        routed.push({ backend, method: req.method ?? '', path: req.url ?? '', status: up.statusCode ?? 0, refusedBy, seq: seq++ });
        res.writeHead(up.statusCode ?? 502, out);
        up.pipe(res);
        up.on('error', () => res.destroy());
      },
    );
    upstream.on('socket', (socket) => socket.once('connect', () => (sent = true)));
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const tried = [...refusedBy, backend];
      if (!sent && err.code === 'ECONNREFUSED' && tried.length < backendPorts.length) {
        forward(req, res, body, (backend + 1) % backendPorts.length, tried);
        return;
      }
      routed.push({ backend, method: req.method ?? '', path: req.url ?? '', status: 502, refusedBy, seq: seq++ });
      res.writeHead(502, { 'content-type': 'application/json', 'x-upstream': String(backend) });
      res.end(JSON.stringify({ error: 'bad_gateway', message: `load balancer: backend ${backend} failed: ${err.code ?? err.message}` }));
    });
    upstream.end(body);
  }

  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    routed,
    servedBy: (backend) => routed.filter((r) => r.backend === backend && r.status !== 502).length,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
