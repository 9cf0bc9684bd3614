/**
 * Run the real, compiled `cds` CLI (server/dist/cli/main.js) as child processes, the way an operator
 * or an orchestrator does: `startServer()` spawns `cds serve` on a free loopback port and waits for
 * `/healthz`; `runCli()` runs a one-shot command. Output is captured line by line (logs are JSON
 * lines on stderr). `startTcpProxy()` puts a loopback proxy in front of a dependency (PostgreSQL,
 * Redis) so a test can cut the network and restore it.
 *
 * Every child and proxy started here is tracked; `cleanupProcesses()` (call it in afterAll/afterEach)
 * SIGKILLs whatever is still alive, and a process 'exit' hook does the same as a last resort, so no
 * child outlives its test file. Build first (`npm run build`); `npm test` does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { logArchive } from './log-archive.js';
import { fileURLToPath } from 'node:url';

export const CLI_PATH = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** Fixed test key (64 hex characters), the same as the in-process test apps use. */
export const TEST_ENCRYPTION_KEY = '11'.repeat(32);

/** Environment values; `undefined` removes a variable. */
export type ChildEnv = Record<string, string | undefined>;

/** Only these come from the parent: never DATABASE_URL, PORT, REDIS_URL... of the developer's shell. */
const INHERITED = ['PATH', 'HOME', 'TMPDIR', 'TEMP', 'TMP', 'LANG', 'LC_ALL', 'TZ', 'SYSTEMROOT'];

const children = new Set<ChildProcess>();
const proxies = new Set<TcpProxy>();
const tempDirs = new Set<string>();

process.once('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function assertBuilt(): void {
  if (!existsSync(CLI_PATH)) throw new Error(`${CLI_PATH} is missing: run "npm run build" first (npm test does).`);
}

/** A fresh temporary folder, removed by cleanupProcesses(). */
export function makeTempDir(prefix = 'cds-proc-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** A port nobody listens on right now, outside the ephemeral range: a random one that binds, then closed. */
export async function freePort(): Promise<number> {
  // Below the kernel's ephemeral range (32768 and up on Linux): a port the kernel hands out for
  // port 0 is also what it hands out as the source port of outgoing connections, and one of those
  // (any test's, PostgreSQL's, Redis's) could take it between this check and the server's own
  // listen, a crash test's restart on the same port included (seen once as EADDRINUSE under load).
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port between 20000 and 31999 after 100 tries');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The environment of a child: a clean base, the fixed encryption key, a temp data dir, then `env`. */
export function childEnv(env: ChildEnv = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const name of INHERITED) if (process.env[name] !== undefined) out[name] = process.env[name];
  const merged: ChildEnv = { DATA_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, ...env };
  if (!('CDS_DATA_DIR' in merged)) merged.CDS_DATA_DIR = makeTempDir();
  for (const [k, v] of Object.entries(merged)) if (v !== undefined) out[k] = v;
  return out;
}

/** DATABASE_URL and CDS_DATA_DIR of a test database. */
export function databaseEnv(db: { databaseUrl: string | null; dataDir: string }): ChildEnv {
  return { CDS_DATA_DIR: db.dataDir, ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}) };
}

/** Collects a stream's output as complete lines. */
class LineCollector {
  readonly lines: string[] = [];
  private partial = '';
  private readonly waiters = new Set<() => void>();
  /** `archive`: also append the lines to the run's log archive (stderr, where `cds` logs go). */
  constructor(stream: NodeJS.ReadableStream | null, private readonly archive: ((lines: readonly string[]) => void) | null = null) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const parts = (this.partial + chunk).split('\n');
      this.partial = parts.pop() ?? '';
      const complete = parts.filter((l) => l.length > 0);
      this.lines.push(...complete);
      this.archive?.(complete);
      for (const w of this.waiters) w();
    });
    stream?.on('end', () => this.flush());
  }
  flush(): void {
    if (this.partial) {
      this.lines.push(this.partial);
      this.archive?.([this.partial]);
    }
    this.partial = '';
    for (const w of this.waiters) w();
  }
  get text(): string {
    return this.lines.join('\n') + (this.partial ? `\n${this.partial}` : '');
  }
  onChange(fn: () => void): () => void {
    this.waiters.add(fn);
    return () => this.waiters.delete(fn);
  }
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

function trackExit(child: ChildProcess): Promise<ExitInfo> {
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
}

function spawnNode(nodeArgs: string[], env: ChildEnv, cwd?: string): ChildProcess {
  assertBuilt();
  const fullEnv = childEnv(env);
  const child = spawn(process.execPath, nodeArgs, {
    env: fullEnv,
    // Never the repository: a forgotten variable must not write ./data into the checkout.
    cwd: cwd ?? fullEnv.CDS_DATA_DIR ?? tmpdir(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  return child;
}

function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

// ---------------------------------------------------------------------------------------------
// One-shot commands

export interface CliResult extends ExitInfo {
  stdout: string;
  stderr: string;
}

export interface RunningCli {
  child: ChildProcess;
  pid: number;
  result: Promise<CliResult>;
  /** Complete stdout lines so far (live). */
  stdoutLines: string[];
  /** SIGKILL (no cleanup, no flush), then the result. */
  kill9(): Promise<CliResult>;
}

/** Start a CLI command without waiting for it (for kill -9 tests). */
export function startCli(args: string[], env: ChildEnv = {}, options: { timeoutMs?: number } = {}): RunningCli {
  return startProcess([CLI_PATH, ...args], env, options);
}

function startProcess(nodeArgs: string[], env: ChildEnv, options: { timeoutMs?: number }): RunningCli {
  const child = spawnNode(nodeArgs, env);
  const out = new LineCollector(child.stdout);
  const err = new LineCollector(child.stderr, logArchive('child'));
  const exited = trackExit(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const result = exited.then((exit) => {
    clearTimeout(timer);
    out.flush();
    err.flush();
    return { ...exit, stdout: out.text, stderr: err.text };
  });
  return {
    child,
    pid: child.pid!,
    result,
    stdoutLines: out.lines,
    async kill9() {
      if (isAlive(child)) child.kill('SIGKILL');
      return result;
    },
  };
}

/**
 * Start `node` on an ES module written to a temp file, with the same clean environment as the CLI.
 * For drivers that call the compiled services directly (import them from `DIST_URL`).
 */
export function startNodeScript(source: string, env: ChildEnv = {}, options: { timeoutMs?: number } = {}): RunningCli {
  const file = path.join(makeTempDir('cds-script-'), 'script.mjs');
  writeFileSync(file, source);
  return startProcess([file], env, options);
}

/**
 * Run `node <file> <args>` to completion (a script of the repository, such as the soak), with the
 * CLI's clean environment, its output collected and its stderr archived for the log scan. Killed
 * (signal SIGKILL) after `timeoutMs`.
 */
export function runNodeFile(file: string, args: string[], env: ChildEnv = {}, options: { timeoutMs?: number } = {}): Promise<CliResult> {
  return startProcess([file, ...args], env, options).result;
}

/** file:// URL of server/dist/ (ends with a slash) for `import` in scripts. */
export const DIST_URL = new URL('../../dist/', import.meta.url).href;

/** Run `cds <args>` to completion. Killed (signal SIGKILL) after `timeoutMs`. */
export function runCli(args: string[], env: ChildEnv = {}, options: { timeoutMs?: number } = {}): Promise<CliResult> {
  return startCli(args, env, options).result;
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json<T = Record<string, unknown>>(): T;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Trusted CA for https URLs. */
  ca?: string | Buffer;
  timeoutMs?: number;
}

/** One request on a fresh connection (no keep-alive, nothing left open afterwards). */
export function httpRequest(url: string, options: RequestOptions = {}): Promise<HttpResponse> {
  const u = new URL(url);
  const lib = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(
      u,
      {
        method: options.method ?? 'GET',
        headers: { connection: 'close', ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}), ...options.headers },
        agent: false,
        ...(options.ca ? { ca: options.ca } : {}),
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: <T>() => JSON.parse(body) as T });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`request to ${url} timed out`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll `fn` every `intervalMs` until it returns a truthy value; throw `describe()` after `timeoutMs`. */
export async function pollUntil<T>(fn: () => Promise<T | undefined | null | false>, options: { timeoutMs: number; intervalMs?: number; describe?: () => string }): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`condition not met within ${options.timeoutMs} ms${lastError ? ` (last error: ${String(lastError)})` : ''}${options.describe ? `\n${options.describe()}` : ''}`);
    }
    await sleep(options.intervalMs ?? 100);
  }
}

// ---------------------------------------------------------------------------------------------
// `cds serve`

export interface StartServerOptions {
  /** Extra or overriding environment (DATABASE_URL, REDIS_URL, TLS_*, RATE_LIMIT_*...). */
  env?: ChildEnv;
  /** Extra CLI arguments after `serve` (e.g. ['--role', 'api']). */
  args?: string[];
  /** Port to listen on; default a free one. */
  port?: number;
  /** For TLS servers: the CA to trust (the self-signed certificate); the base URL becomes https. */
  ca?: string | Buffer;
  /** How long to wait for /healthz (default 20 s). */
  readyTimeoutMs?: number;
  /**
   * Ready when a log line's `msg` equals this, instead of when /healthz answers: for
   * `--role worker`, which serves no HTTP (`'worker ready'`).
   */
  readyLog?: string;
}

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  /** http(s)://127.0.0.1:PORT */
  baseUrl: string;
  stdoutLines: string[];
  stderrLines: string[];
  stderrText(): string;
  /** stderr lines that parse as JSON (the pino log). */
  logs(): Array<Record<string, unknown>>;
  /** Wait until a log line satisfies `predicate`; throws with stderr after `timeoutMs`. */
  waitForLog(predicate: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** A request to this server (the CA applied for TLS). */
  request(pathname: string, options?: RequestOptions): Promise<HttpResponse>;
  isRunning(): boolean;
  exited: Promise<ExitInfo>;
  /** SIGTERM and wait; SIGKILL if still running after `timeoutMs` (then `forced` is true). */
  stop(timeoutMs?: number): Promise<ExitInfo & { forced: boolean }>;
  /** SIGKILL and wait. */
  kill9(): Promise<ExitInfo>;
}

export async function startServer(options: StartServerOptions = {}): Promise<ServerProcess> {
  const port = options.port ?? (await freePort());
  const env: ChildEnv = { HOST: '127.0.0.1', ...options.env, PORT: String(port) };
  const child = spawnNode([CLI_PATH, 'serve', ...(options.args ?? [])], env);
  const out = new LineCollector(child.stdout);
  const err = new LineCollector(child.stderr, logArchive('child'));
  const exited = trackExit(child);
  let exitInfo: ExitInfo | null = null;
  void exited.then((e) => (exitInfo = e));
  const baseUrl = `${options.ca ? 'https' : 'http'}://127.0.0.1:${port}`;

  const server: ServerProcess = {
    child,
    pid: child.pid!,
    port,
    baseUrl,
    stdoutLines: out.lines,
    stderrLines: err.lines,
    stderrText: () => err.text,
    logs: () =>
      err.lines.flatMap((line) => {
        try {
          const parsed = JSON.parse(line) as unknown;
          return parsed && typeof parsed === 'object' ? [parsed as Record<string, unknown>] : [];
        } catch {
          return [];
        }
      }),
    waitForLog(predicate, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = err.lines.find(predicate);
          if (hit !== undefined) {
            done();
            resolve(hit);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no matching log line within ${timeoutMs} ms; stderr:\n${err.text}`));
        }, timeoutMs);
        const off = err.onChange(check);
        const done = () => {
          clearTimeout(timer);
          off();
        };
        check();
      });
    },
    request: (pathname, requestOptions = {}) =>
      httpRequest(baseUrl + pathname, { ...(options.ca ? { ca: options.ca } : {}), ...requestOptions }).catch(async (error: unknown) => {
        // A dead server is the interesting part of the failure: say so, with the end of its stderr.
        await Promise.race([exited, sleep(500)]);
        if (isAlive(child)) throw error;
        throw new Error(
          `${String(error)}: cds serve (pid ${child.pid}) has exited (code ${child.exitCode}, signal ${child.signalCode}); last stderr:\n${err.lines.slice(-25).join('\n')}`,
        );
      }),
    isRunning: () => isAlive(child),
    exited,
    async stop(timeoutMs = 15_000) {
      if (!isAlive(child)) return { ...(await exited), forced: false };
      child.kill('SIGTERM');
      const timer = sleep(timeoutMs).then(() => 'timeout' as const);
      const first = await Promise.race([exited, timer]);
      if (first !== 'timeout') return { ...first, forced: false };
      child.kill('SIGKILL');
      return { ...(await exited), forced: true };
    },
    async kill9() {
      if (isAlive(child)) child.kill('SIGKILL');
      return exited;
    },
  };

  // Ready = /healthz answers 200 (or the ready log line). Fail fast if the process exits; fail with its stderr on timeout.
  const timeoutMs = options.readyTimeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  const readyLog = options.readyLog;
  for (;;) {
    if (exitInfo !== null || !isAlive(child)) {
      const e = await exited;
      err.flush();
      throw new Error(`cds serve exited before becoming healthy (code ${e.code}, signal ${e.signal}); stderr:\n${err.text}`);
    }
    if (readyLog !== undefined) {
      if (server.logs().some((l) => l.msg === readyLog)) return server;
    } else {
      try {
        const r = await server.request('/healthz', { timeoutMs: 1_000 });
        if (r.status === 200) return server;
      } catch {
        // not listening yet
      }
    }
    if (Date.now() > deadline) {
      await server.kill9();
      throw new Error(`cds serve did not ${readyLog !== undefined ? `log "${readyLog}"` : 'answer /healthz'} within ${timeoutMs} ms; stderr:\n${err.text}`);
    }
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------
// Loopback TCP proxy for outage tests

export type CutMode =
  /** Destroy live connections; accept new ones and reset them at once (like a refused connection). */
  | 'reset'
  /** Destroy live connections; accept new ones and never answer (a black hole: clients time out). */
  | 'blackhole';

export interface TcpProxy {
  port: number;
  /** Open proxied connections right now. */
  connectionCount(): number;
  /** Connections accepted since start (including refused ones). */
  acceptedCount(): number;
  isCut(): boolean;
  /** Destroy every connection and refuse (or black-hole) new ones. */
  cut(mode?: CutMode): void;
  /**
   * A partition: open connections stay open but no byte moves either way, new connections are
   * black-holed. Queries sent now hang in flight until cut() or restore() drops them.
   */
  freeze(): void;
  /** Forward new connections again (black-holed and frozen ones are dropped). */
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const live = new Set<net.Socket>();
  const held = new Set<net.Socket>();
  let cutMode: CutMode | 'frozen' | null = null;
  let accepted = 0;

  const server = net.createServer((client) => {
    accepted += 1;
    client.on('error', () => undefined);
    if (cutMode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    if (cutMode === 'blackhole' || cutMode === 'frozen') {
      held.add(client);
      client.on('close', () => held.delete(client));
      client.resume(); // swallow whatever the client sends
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    upstream.on('error', () => undefined);
    live.add(client);
    live.add(upstream);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      live.delete(client);
      live.delete(upstream);
    };
    client.on('close', closeBoth);
    upstream.on('close', closeBoth);
    // Forward by hand (not pipe) so freeze() can drop bytes without closing anything.
    client.on('data', (chunk: Buffer) => {
      if (cutMode !== 'frozen') upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cutMode !== 'frozen') client.write(chunk);
    });
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  const proxy: TcpProxy = {
    port,
    connectionCount: () => live.size / 2,
    acceptedCount: () => accepted,
    isCut: () => cutMode !== null,
    cut(mode = 'reset') {
      cutMode = mode;
      for (const s of [...live]) s.destroy();
      live.clear();
    },
    freeze() {
      cutMode = 'frozen';
    },
    restore() {
      if (cutMode === 'frozen') {
        // Bytes were dropped: those connections cannot carry on.
        for (const s of [...live]) s.destroy();
        live.clear();
      }
      cutMode = null;
      for (const s of [...held]) s.destroy();
      held.clear();
    },
    async close() {
      proxies.delete(proxy);
      cutMode = 'reset';
      for (const s of [...live, ...held]) s.destroy();
      live.clear();
      held.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  proxies.add(proxy);
  return proxy;
}

// ---------------------------------------------------------------------------------------------

/** SIGKILL every child still running, close every proxy, remove temp folders. Call in afterAll. */
export async function cleanupProcesses(): Promise<void> {
  const waits: Array<Promise<unknown>> = [];
  for (const child of [...children]) {
    if (isAlive(child)) {
      waits.push(new Promise((resolve) => child.once('close', resolve)));
      child.kill('SIGKILL');
    } else {
      children.delete(child);
    }
  }
  await Promise.race([Promise.all(waits), sleep(5_000)]);
  await Promise.all([...proxies].map((p) => p.close()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/** Children currently running (a test can assert none leaked). */
export function runningChildren(): number {
  return [...children].filter(isAlive).length;
}
