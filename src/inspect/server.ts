import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { WebSocket } from 'ws';
import { loadPeer } from '../protocol/peers.js';
import {
  type InspectorAck,
  type InspectorCommand,
  isLoopbackHost,
  isRunId,
  parseCommand,
  type UiMessage,
} from './protocol.js';
import { type RecordedSessions, SessionRoutes } from './server/sessions.js';

export interface InspectorServerOptions {
  /** Only loopback addresses are accepted (default 127.0.0.1). */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** The per-run secret every page and program must present (default: 24 random bytes). */
  token?: string;
  /** Frames kept for pages that open later (default 50 000; the oldest go first). */
  maxFrames?: number;
  /** Recorded sessions the page lists, opens as a timeline and forks (`troupe inspect <session>`). */
  sessions?: RecordedSessions;
}

export interface InspectorServer {
  readonly port: number;
  readonly token: string;
  /** Open this in a browser. */
  readonly pageUrl: string;
  /** Give this to the program: `connectInspector({ url })`, or `TROUPE_INSPECT=<url>`. */
  readonly connectUrl: string;
  /** How many runs are connected now. */
  readonly connectedRuns: number;
  close(): Promise<void>;
}

const SCRIPT = 'text/javascript; charset=utf-8';
/** The page's own files: a fixed list, never a path taken from the request. */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/app.js': { file: 'app.js', type: SCRIPT },
  '/chart.js': { file: 'chart.js', type: SCRIPT },
  '/controls.js': { file: 'controls.js', type: SCRIPT },
  '/dom.js': { file: 'dom.js', type: SCRIPT },
  '/fork.js': { file: 'fork.js', type: SCRIPT },
  '/panels.js': { file: 'panels.js', type: SCRIPT },
  '/store.js': { file: 'store.js', type: SCRIPT },
  '/timeline.js': { file: 'timeline.js', type: SCRIPT },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

/** The page's files sit beside this module: in src/, and in dist/ where the build copies them (scripts/build.ts). */
function pageDir(): string {
  const path = fileURLToPath(new URL('./page/', import.meta.url));
  if (!existsSync(`${path}index.html`)) {
    throw new Error(`troupe inspect: the inspector page is missing from this installation (looked in ${path})`);
  }
  return path;
}

/** The page's only library, served from the installed elkjs package (never from a CDN). */
function elkPath(): string {
  return fileURLToPath(
    loadPeer('elkjs', "The inspector page's graph layout", () => import.meta.resolve('elkjs/lib/elk.bundled.js')),
  );
}

function sameSecret(given: string | null, token: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface Run {
  control?: WebSocket;
  inspectors: number;
}

/** Documented where the root entry exports it: ./entry.ts. */
export async function startInspectorServer(options: InspectorServerOptions = {}): Promise<InspectorServer> {
  // Loaded here, not at the top: a program that never starts the inspector does not pay for `ws` (6 MB of RSS).
  const { WebSocketServer } = await import('ws');
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host)) throw new Error(`troupe inspect listens on loopback only, not on ${host}`);
  const token = options.token ?? randomBytes(24).toString('base64url');
  const maxFrames = options.maxFrames ?? 50_000;
  const routes = options.sessions ? new SessionRoutes(options.sessions) : undefined;
  const dir = pageDir();
  const files = new Map<string, Buffer>();
  const read = (name: string, path: string) => {
    let data = files.get(name);
    if (!data) {
      data = readFileSync(path);
      files.set(name, data);
    }
    return data;
  };

  // Every message a page must see to rebuild the view (frames and answered commands), oldest first; `dropped`
  // counts those evicted, so message i has the sequence number dropped + i.
  const frames: string[] = [];
  let dropped = 0;
  const remember = (message: string) => {
    frames.push(message);
    if (frames.length > maxFrames) {
      dropped += frames.length - maxFrames;
      frames.splice(0, frames.length - maxFrames);
    }
  };
  /** Commands sent on to a program, by the id the server gave them: who sent them, under which id. */
  const inFlight = new Map<string, { page: WebSocket; command: InspectorCommand }>();
  let forwarded = 0;
  const runs = new Map<string, Run>();
  const pages = new Set<WebSocket>();
  let anonymous = 0;
  let port = 0;

  const hosts = () => new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  const origins = () => new Set([`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]);

  const toPages = (message: UiMessage | string) => {
    const text = typeof message === 'string' ? message : JSON.stringify(message);
    for (const page of pages) if (page.readyState === page.OPEN) page.send(text);
  };
  const runList = () => [...runs].map(([run, r]) => ({ run, connected: r.control !== undefined || r.inspectors > 0 }));

  const security = (res: ServerResponse) => {
    res.setHeader(
      'Content-Security-Policy',
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws://127.0.0.1:${port} ws://localhost:${port}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-store');
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    security(res);
    if (!hosts().has(req.headers.host ?? '')) {
      res.writeHead(421, { 'Content-Type': 'text/plain' }).end('wrong host\n');
      return;
    }
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    if (SessionRoutes.handles(url.pathname)) {
      // A fork is the one request that changes anything: only our own page may send it, never another site.
      const foreign = req.method !== 'GET' && !origins().has(req.headers.origin ?? '');
      if (!sameSecret(url.searchParams.get('token'), token) || foreign || !routes) {
        res.writeHead(403, { 'Content-Type': 'text/plain' }).end('forbidden\n');
        return;
      }
      void routes.answer(req, res, url);
      return;
    }
    if (req.method !== 'GET') {
      res.writeHead(405, { 'Content-Type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (url.pathname === '/' || url.pathname === '/index.html') {
      if (!sameSecret(url.searchParams.get('token'), token)) {
        res
          .writeHead(403, { 'Content-Type': 'text/plain' })
          .end('Open the address `troupe inspect` printed: it carries this run’s token.\n');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(read('index', `${dir}index.html`));
      return;
    }
    if (url.pathname === '/frames') {
      // The page's first paint: everything so far in one response, before its socket opens (a headless
      // screenshot waits for requests, not for socket messages).
      if (!sameSecret(url.searchParams.get('token'), token)) {
        res.writeHead(403, { 'Content-Type': 'text/plain' }).end('forbidden\n');
        return;
      }
      const hello = JSON.stringify({ type: 'hello', runs: runList() } satisfies UiMessage);
      res
        .writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' })
        .end(`{"next":${dropped + frames.length},"messages":[${[hello, ...frames].join(',')}]}`);
      return;
    }
    if (url.pathname === '/vendor/elk.bundled.js') {
      let elk: Buffer;
      try {
        elk = read('elk', elkPath());
      } catch (error) {
        // Without elkjs the page still lists runs and events; it cannot lay out the statechart.
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`${(error as Error).message}\n`);
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8' }).end(elk);
      return;
    }
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    const asset = ASSETS[url.pathname];
    if (asset) {
      res.writeHead(200, { 'Content-Type': asset.type }).end(read(asset.file, `${dir}${asset.file}`));
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });

  const refuse = (socket: Duplex, status: number, text: string) => {
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!hosts().has(req.headers.host ?? '')) return refuse(socket, 421, 'Misdirected Request');
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    if (!sameSecret(url.searchParams.get('token'), token)) return refuse(socket, 403, 'Forbidden');
    const origin = req.headers.origin;
    const path = url.pathname;
    if (path === '/ui') {
      // A page: only our own page, never another site open in the same browser.
      if (origin === undefined || !origins().has(origin)) return refuse(socket, 403, 'Forbidden');
      const since = Number(url.searchParams.get('since') ?? 0);
      wss.handleUpgrade(req, socket, head, (ws) => onPage(ws, Number.isSafeInteger(since) ? since : 0));
      return;
    }
    if (path !== '/inspect' && path !== '/control') return refuse(socket, 404, 'Not Found');
    // Programs connect from Node, which sends no Origin; a browser always does.
    if (origin !== undefined) return refuse(socket, 403, 'Forbidden');
    const given = url.searchParams.get('run');
    if (path === '/control' && !isRunId(given)) return refuse(socket, 400, 'Bad Request');
    const run = isRunId(given) ? given : `run-${++anonymous}`;
    wss.handleUpgrade(req, socket, head, (ws) => (path === '/inspect' ? onInspector(ws, run) : onControl(ws, run)));
  });

  const runOf = (run: string): Run => {
    let r = runs.get(run);
    if (!r) {
      r = { inspectors: 0 };
      runs.set(run, r);
    }
    return r;
  };
  const announce = (run: string) => {
    const r = runs.get(run);
    toPages({ type: 'run', run, connected: r !== undefined && (r.control !== undefined || r.inspectors > 0) });
  };

  function onInspector(ws: WebSocket, run: string) {
    runOf(run).inspectors++;
    announce(run);
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = data.toString();
      try {
        JSON.parse(text);
      } catch {
        return;
      }
      const message = `{"type":"frame","run":${JSON.stringify(run)},"frame":${text}}`;
      remember(message);
      toPages(message);
    });
    ws.on('close', () => {
      runOf(run).inspectors--;
      announce(run);
    });
    ws.on('error', () => {});
  }

  function onControl(ws: WebSocket, run: string) {
    const r = runOf(run);
    r.control?.close(4000, 'replaced');
    r.control = ws;
    announce(run);
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let value: Partial<InspectorAck>;
      try {
        value = JSON.parse(data.toString()) as Partial<InspectorAck>;
      } catch {
        return;
      }
      if (value.type !== 'ack' || typeof value.id !== 'string' || typeof value.ok !== 'boolean') return;
      const sent = inFlight.get(value.id);
      if (!sent || sent.command.run !== run) return;
      inFlight.delete(value.id);
      const ack: InspectorAck = { type: 'ack', id: sent.command.id, run, ok: value.ok, command: sent.command };
      if (typeof value.error === 'string') ack.error = value.error.slice(0, 500);
      if (typeof value.detail === 'string') ack.detail = value.detail.slice(0, 500);
      // Every page shows what was done to the run, and by whom: the sender knows the ack by its id.
      const text = JSON.stringify(ack);
      remember(text);
      for (const page of pages) {
        if (page.readyState !== page.OPEN) continue;
        page.send(page === sent.page ? JSON.stringify({ ...ack, mine: true } satisfies InspectorAck) : text);
      }
    });
    ws.on('close', () => {
      for (const [id, sent] of inFlight) {
        if (sent.command.run !== run) continue;
        inFlight.delete(id);
        const ack: InspectorAck = { type: 'ack', id: sent.command.id, run, ok: false, error: 'the run disconnected' };
        if (sent.page.readyState === sent.page.OPEN) sent.page.send(JSON.stringify({ ...ack, command: sent.command }));
      }
      if (r.control === ws) r.control = undefined;
      announce(run);
    });
    ws.on('error', () => {});
  }

  function onPage(ws: WebSocket, since: number) {
    pages.add(ws);
    ws.send(JSON.stringify({ type: 'hello', runs: runList() } satisfies UiMessage));
    for (const frame of frames.slice(Math.max(0, since - dropped))) ws.send(frame);
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const command = parseCommand(data.toString());
      if (!command) return;
      const control = runs.get(command.run)?.control;
      if (!control || control.readyState !== control.OPEN) {
        const ack: InspectorAck = {
          type: 'ack',
          id: command.id,
          run: command.run,
          ok: false,
          error: 'run not connected',
        };
        ws.send(JSON.stringify(ack));
        return;
      }
      const id = `p${++forwarded}`;
      inFlight.set(id, { page: ws, command });
      control.send(JSON.stringify({ ...command, id }));
    });
    ws.on('close', () => pages.delete(ws));
    ws.on('error', () => {});
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('troupe inspect: no TCP address');
  port = address.port;
  const shown = host.includes(':') ? `[${host}]` : host;
  const query = `token=${encodeURIComponent(token)}`;

  return {
    port,
    token,
    pageUrl: `http://${shown}:${port}/?${query}`,
    connectUrl: `ws://${shown}:${port}/?${query}`,
    get connectedRuns() {
      return runList().filter((r) => r.connected).length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
