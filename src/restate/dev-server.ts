/**
 * `troupe/restate/dev`: a local Restate server for development and tests, and registering a worker with it.
 *
 * @module troupe/restate/dev
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** A `restate-server` this process started: loopback only, its own data folder, ports chosen by the server. */
export interface RestateDevServer {
  /** Where invocations go: `POST {ingressUrl}/{object}/{key}/{handler}`. */
  readonly ingressUrl: string;
  /** The admin API: deployments, invocations, SQL introspection. */
  readonly adminUrl: string;
  readonly pid: number;
  /** Registers (or re-registers, `force`) a deployment: an endpoint that serves Troupe's objects. */
  register(uri: string): Promise<void>;
  /** Stops the server (SIGTERM, SIGKILL after a grace) and deletes its data folder unless it was given. */
  stop(): Promise<void>;
}

/**
 * How `startRestateDevServer` runs a local Restate server for development and tests: its data folder, how long it may
 * take to start, and extra environment.
 */
export interface RestateDevServerOptions {
  /** The server's data folder; a fresh temporary one (deleted on stop) by default. */
  baseDir?: string;
  /** How long to wait for the three listeners (default 60 s: a loaded machine is slow to start RocksDB). */
  startTimeoutMs?: number;
  /** Extra environment, e.g. `RESTATE_WORKER__INVOKER__INACTIVITY_TIMEOUT`. */
  env?: Record<string, string>;
}

/**
 * The binary the `@restatedev/restate-server` dev dependency installed for this platform (its optional dependency
 * `@restatedev/restate-server-<platform>-<arch>`, resolved from the package itself, as its own launcher does).
 */
export function restateServerBinary(): string {
  let launcher: string;
  try {
    launcher = createRequire(import.meta.url).resolve('@restatedev/restate-server/package.json');
  } catch {
    // Troupe's own dev dependency: a project that installed troupe has it only if it added it.
    throw new Error(
      'startRestateDevServer runs the restate-server binary: npm install --save-dev @restatedev/restate-server@1.7',
    );
  }
  return createRequire(launcher).resolve(`@restatedev/restate-server-${platform()}-${arch()}/bin/restate-server`);
}

/**
 * Starts `restate-server` for tests, examples and local development. Random ports (the server picks them and logs
 * them, which is race-free where choosing free ports ourselves is not), loopback only, telemetry off, JSON logs.
 */
export async function startRestateDevServer(options: RestateDevServerOptions = {}): Promise<RestateDevServer> {
  const ownDir = options.baseDir === undefined;
  const baseDir = options.baseDir ?? mkdtempSync(join(tmpdir(), 'troupe-restate-'));
  const child = spawn(
    restateServerBinary(),
    ['--base-dir', baseDir, '--no-logo', '--listen-mode', 'tcp', '--bind-ip', '127.0.0.1', '--log-format', 'json'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        RESTATE_USE_RANDOM_PORTS: 'true',
        RESTATE_DISABLE_TELEMETRY: 'true',
        RESTATE_ADVERTISED_HOST: '127.0.0.1',
        // A test server does not need the production cache: 2 GiB of RocksDB memory per server by default.
        RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE: '256 MiB',
        RESTATE_LOG_FILTER: 'warn,restate_core::network::net_util=info,restate_ingress_http=info,restate_admin=info',
        ...options.env,
      },
    },
  );
  const stop = () => stopServer(child, ownDir ? baseDir : undefined);
  try {
    const ports = await listeners(child, options.startTimeoutMs ?? 60_000);
    const ingressUrl = `http://127.0.0.1:${ports.ingress}`;
    const adminUrl = `http://127.0.0.1:${ports.admin}`;
    await waitHealthy(`${adminUrl}/health`, options.startTimeoutMs ?? 60_000);
    return {
      ingressUrl,
      adminUrl,
      pid: child.pid ?? -1,
      register: (uri) => registerDeployment(adminUrl, uri),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Registers a deployment with the admin API, replacing an earlier registration of the same address. */
export async function registerDeployment(adminUrl: string, uri: string): Promise<void> {
  const response = await fetch(`${adminUrl}/deployments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ uri, force: true }),
  });
  if (!response.ok) throw new Error(`Registering ${uri} failed: ${response.status} ${await response.text()}`);
}

interface Ports {
  ingress: number;
  admin: number;
}

/** Reads the server's JSON log until both the ingress and the admin API say which port they listen on. */
function listeners(child: ChildProcess, timeoutMs: number): Promise<Ports> {
  return new Promise((resolve, reject) => {
    const found: Partial<Ports> = {};
    const tail: string[] = [];
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const errors = createInterface({ input: child.stderr as NodeJS.ReadableStream });
    const timer = setTimeout(
      () => finish(new Error(`restate-server did not start in ${timeoutMs} ms:\n${tail.join('\n')}`)),
      timeoutMs,
    );
    const onExit = (code: number | null) => finish(new Error(`restate-server exited (${code}):\n${tail.join('\n')}`));
    child.once('exit', onExit);
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      const listener = listenerIn(line);
      if (listener) found[listener.kind] = listener.port;
      if (found.ingress !== undefined && found.admin !== undefined) finish();
    };
    lines.on('line', onLine);
    errors.on('line', onLine);
    function finish(error?: Error) {
      clearTimeout(timer);
      child.off('exit', onExit);
      // Keep draining the pipes so a chatty server never blocks on a full one.
      lines.off('line', onLine);
      errors.off('line', onLine);
      lines.on('line', () => {});
      errors.on('line', () => {});
      if (error) reject(error);
      else resolve(found as Ports);
    }
  });
}

function listenerIn(line: string): { kind: keyof Ports; port: number } | undefined {
  if (!line.startsWith('{')) return undefined;
  let record: { fields?: Record<string, unknown>; span?: Record<string, unknown>; spans?: Record<string, unknown>[] };
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  const values = [record.fields, record.span, ...(record.spans ?? [])].filter(Boolean) as Record<string, unknown>[];
  const field = (name: string) => values.find((v) => v[name] !== undefined)?.[name];
  const name = String(field('server_name') ?? '');
  const port = Number(field('server.port'));
  if (!Number.isInteger(port)) return undefined;
  if (name.startsWith('http-ingress')) return { kind: 'ingress', port };
  if (name.startsWith('admin-api')) return { kind: 'admin', port };
  return undefined;
}

async function waitHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`restate-server's admin API at ${url} is not healthy`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stopServer(child: ChildProcess, removeDir: string | undefined): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const grace = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(grace);
  }
  if (removeDir) rmSync(removeDir, { recursive: true, force: true });
}
