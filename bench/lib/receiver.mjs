/**
 * The benches' HTTPS webhook receiver (bench/webhooks.mjs, bench/scale-out.mjs): this file run as
 * a process of its own (`startReceiverProcess` forks it), so it does not share the sender's
 * thread, driven over IPC. It answers 200 (after `delayMs`) and counts what it got per (path,
 * event id), and the TLS handshakes.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import https from 'node:https';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generate } from 'selfsigned';
import { processCpuMs } from './proc.mjs';

const THIS_FILE = fileURLToPath(import.meta.url);

/** Starts the receiver; resolves once it listens. `stats()`: total, connections, distinct, duplicates. */
export async function startReceiverProcess({ delayMs = 0 } = {}) {
  const child = fork(THIS_FILE, [String(delayMs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (msg, key) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m && key in m) {
          child.off('message', on);
          resolve(m[key]);
        }
      };
      child.on('message', on);
      child.send(msg);
    });
  const ready = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the webhook receiver exited (${code})`)));
  });
  return {
    pid: child.pid,
    ca: ready.ca,
    cpuMs: () => processCpuMs(child.pid),
    url: (p) => `https://127.0.0.1:${ready.port}${p}`,
    reset: () => ask('reset', 'reset'),
    stats: () => ask('stats', 'stats'),
    close: async () => {
      if (child.exitCode !== null) return;
      child.send('exit');
      await once(child, 'exit');
    },
  };
}

/** The receiver itself, in the forked process: a CA and a certificate of its own, HTTPS on 127.0.0.1. */
async function runReceiverProcess(delayMs) {
  const ca = await generate([{ name: 'commonName', value: 'bench CA' }], {
    keyType: 'ec', algorithm: 'sha256',
    extensions: [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true }],
  });
  const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec', algorithm: 'sha256', ca: { cert: ca.cert, key: ca.private },
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }, { name: 'extKeyUsage', serverAuth: true }],
  });
  const seen = new Map(); // "path event-id" -> count
  let total = 0;
  const server = https.createServer({ cert: leaf.cert, key: leaf.private, keepAliveTimeout: 30_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      total += 1;
      const id = req.headers['svc-webhook-id'];
      if (id) {
        const key = `${req.url} ${id}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  // TLS handshakes per phase: keep-alive reuse shows as a handful, one per request would be a fault.
  let connections = 0;
  server.on('secureConnection', () => (connections += 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.on('message', (msg) => {
    if (msg === 'reset') {
      seen.clear();
      total = 0;
      connections = 0;
      process.send({ reset: true });
    } else if (msg === 'stats') {
      process.send({ stats: { total, connections, distinct: seen.size, duplicates: [...seen.values()].filter((c) => c > 1).length } });
    } else if (msg === 'exit') {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
  process.send({ ready: true, port: server.address().port, ca: ca.cert });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runReceiverProcess(Number(process.argv[2] ?? 0));
