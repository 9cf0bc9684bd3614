/**
 * The soak's webhook receivers: real HTTPS servers on loopback, in their own process (forked by
 * soak/run.mjs, driven over IPC) so they never share an event loop with the load generator.
 *
 * How it works: one CA is made at start-up; each receiver is its own HTTPS server on its own port
 * with a certificate from that CA (the service trusts it through NODE_EXTRA_CA_CERTS). A receiver
 * has a behaviour: `healthy` (200 at once), `flaky` (500 for a fraction of requests), `slow`
 * (some answers late, a few hang past the sender's 10 s time-out and are answered after it), or
 * `outage` (healthy, but the harness closes its port for a stretch and opens it again). Every
 * request is checked the way a lender's receiver must check it (the Svc-Signature over the raw
 * body with the endpoint's secret, the envelope's id and type against the headers) and counted per
 * event id: `accepted` only when a 2xx was actually written to a live connection, `late` when the
 * receiver answered after the sender had given up (the sender records a failure and retries, so
 * that event is expected to arrive again: at-least-once). The harness asks for everything at the
 * end ('dump', written to a file because it can be large).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import { generate } from 'selfsigned';

const HANG_MS = 12_000; // past the sender's 10 s time-out

async function makeAuthority() {
  const ca = await generate([{ name: 'commonName', value: 'cds soak CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 7 * 24 * 3600_000),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 7 * 24 * 3600_000),
    ca: { cert: ca.cert, key: ca.private },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ],
  });
  return { caCert: ca.cert, cert: leaf.cert, key: leaf.private };
}

function verifySignature(header, rawBody, secret, nowSeconds) {
  let t = null;
  const sigs = [];
  for (const part of String(header ?? '').split(',')) {
    const i = part.indexOf('=');
    if (i <= 0) return 'malformed signature header';
    const key = part.slice(0, i);
    const value = part.slice(i + 1);
    if (key === 't' && /^\d+$/.test(value)) t = Number(value);
    else if (key === 'v1') sigs.push(Buffer.from(value, 'utf8'));
  }
  if (t === null || sigs.length === 0) return 'signature header without t or v1';
  if (Math.abs(nowSeconds - t) > 300) return 'signature timestamp more than 300 s away';
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest('hex'), 'utf8');
  return sigs.some((s) => s.length === expected.length && timingSafeEqual(s, expected)) ? null : 'signature does not verify';
}

function createReceiver(spec, tls) {
  const state = {
    name: spec.name,
    behaviour: spec.behaviour,
    port: 0,
    secret: null,
    up: true,
    requests: 0,
    answered: {}, // status -> count
    hung: 0,
    late: 0, // answered after the sender had gone
    invalid: [], // first few problems (wrong signature, body); never bodies
    invalidCount: 0,
    events: new Map(), // event id -> { type, accepted, attempts: [attempt of each accepted], late }
    downSince: null,
    outages: [],
  };
  const sockets = new Set();
  const problem = (text) => {
    state.invalidCount += 1;
    if (state.invalid.length < 20) state.invalid.push(text);
  };

  const server = https.createServer({ cert: tls.cert, key: tls.key, keepAliveTimeout: 30_000 }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      state.requests += 1;
      const raw = Buffer.concat(chunks);
      const id = req.headers['svc-webhook-id'];
      const type = req.headers['svc-webhook-type'];
      let envelope = null;
      try {
        envelope = JSON.parse(raw.toString('utf8'));
      } catch {
        problem(`${id}: body is not JSON`);
      }
      if (state.secret) {
        const bad = verifySignature(req.headers['svc-signature'], raw, state.secret, Math.floor(Date.now() / 1000));
        if (bad) problem(`${id}: ${bad}`);
      }
      if (envelope && (envelope.id !== id || envelope.type !== type || !Number.isInteger(envelope.attempt) || typeof envelope.data !== 'object')) {
        problem(`${id}: envelope does not match its headers (id/type/attempt/data)`);
      }
      let entry = state.events.get(id);
      if (!entry) {
        entry = { type, accepted: 0, attempts: [], late: 0, failedAnswers: 0 };
        state.events.set(id, entry);
      }
      const attempt = envelope?.attempt ?? null;
      // A response that never finished went to a sender that had already given up (its time-out):
      // it records a failure and retries, so this event is expected again.
      let finished = false;
      res.on('close', () => {
        if (finished) return;
        state.late += 1;
        entry.late += 1;
      });
      const reply = (status) => {
        if (res.destroyed) return;
        res.on('finish', () => {
          finished = true;
          state.answered[status] = (state.answered[status] ?? 0) + 1;
          if (status >= 200 && status < 300) {
            entry.accepted += 1;
            entry.attempts.push(attempt);
          } else entry.failedAnswers += 1;
        });
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(status < 300 ? '{"received":true}' : '{"error":"soak: deliberate failure"}');
      };
      const r = Math.random();
      if (spec.behaviour === 'flaky' && r < spec.failRate) return reply(500);
      if (spec.behaviour === 'slow') {
        if (r < spec.hangRate) {
          state.hung += 1;
          return void setTimeout(() => reply(200), HANG_MS);
        }
        if (r < spec.hangRate + spec.slowRate) return void setTimeout(() => reply(200), 50 + Math.floor(Math.random() * 450));
      }
      reply(200);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', () => undefined);

  const listen = (port) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        state.port = server.address().port;
        resolve();
      });
    });

  return {
    state,
    listen,
    async down() {
      if (!state.up) return;
      state.up = false;
      state.downSince = Date.now();
      await new Promise((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
    async up() {
      if (state.up) return;
      await listen(state.port);
      state.up = true;
      state.outages.push({ from: state.downSince, to: Date.now() });
      state.downSince = null;
    },
    close: () =>
      new Promise((resolve) => {
        if (!state.up) return resolve();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

function summary(r) {
  const s = r.state;
  return { name: s.name, behaviour: s.behaviour, up: s.up, requests: s.requests, answered: s.answered, hung: s.hung, late: s.late, invalidCount: s.invalidCount, distinctEvents: s.events.size };
}

async function main() {
  const specs = JSON.parse(process.argv[2]);
  const tls = await makeAuthority();
  const receivers = new Map();
  for (const spec of specs) {
    const r = createReceiver(spec, tls);
    await r.listen(0);
    receivers.set(spec.name, r);
  }
  process.on('message', async (msg) => {
    try {
      if (msg.op === 'secrets') {
        for (const [name, secret] of Object.entries(msg.secrets)) receivers.get(name).state.secret = secret;
        process.send({ re: msg.id });
      } else if (msg.op === 'down') {
        await receivers.get(msg.name).down();
        process.send({ re: msg.id });
      } else if (msg.op === 'up') {
        await receivers.get(msg.name).up();
        process.send({ re: msg.id });
      } else if (msg.op === 'stats') {
        process.send({ re: msg.id, stats: [...receivers.values()].map(summary) });
      } else if (msg.op === 'dump') {
        const out = {};
        for (const [name, r] of receivers) {
          out[name] = { ...summary(r), invalid: r.state.invalid, outages: r.state.outages, events: Object.fromEntries(r.state.events) };
        }
        writeFileSync(msg.file, JSON.stringify(out));
        process.send({ re: msg.id });
      } else if (msg.op === 'exit') {
        await Promise.all([...receivers.values()].map((r) => r.close()));
        process.exit(0);
      }
    } catch (err) {
      process.send({ re: msg.id, error: String(err?.stack ?? err) });
    }
  });
  process.send({ ready: true, ca: tls.caCert, ports: Object.fromEntries([...receivers].map(([name, r]) => [name, r.state.port])) });
}

await main();
