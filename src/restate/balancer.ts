import {
  type ClientHttp2Session,
  connect,
  constants,
  createServer,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { listen } from './listen.js';

/** One address in front of several workers: what to register with Restate as the deployment. */
export interface AgentBalancer {
  readonly url: string;
  readonly port: number;
  /** Stops the proxy without waiting for open turns (Restate retries them) and drops its connections to workers. */
  close(): Promise<void>;
}

/**
 * Restate sends each new invocation to the latest deployment that serves its object, so workers registered one by
 * one do not share the load: the last one gets it all. Several workers need one address in front of them. This is
 * that address: an HTTP/2 (h2c) round-robin proxy that streams both directions of each request as it comes
 * (Restate's protocol is a bidirectional stream per invocation: journal entries one way, acknowledgements and
 * completions the other). A worker that refuses the connection is skipped; a stream cut by a worker that dies
 * mid-invocation is reset, and Restate retries the invocation, which comes back through here to a live worker.
 *
 * For loopback and one host; across machines use any HTTP/2-aware load balancer (Envoy, a cloud one) the same way.
 */
export async function balanceAgents(
  workerUrls: readonly string[],
  options: { port?: number; host?: string } = {},
): Promise<AgentBalancer> {
  if (workerUrls.length === 0) throw new Error('balanceAgents needs at least one worker URL');
  const host = options.host ?? '127.0.0.1';
  const sessions = new Map<string, Promise<ClientHttp2Session>>();
  let next = 0;

  /** The open session to a worker, or a new one; rejects when the worker refuses (it is down). */
  function sessionTo(url: string): Promise<ClientHttp2Session> {
    const open = sessions.get(url);
    if (open) return open;
    const opening = new Promise<ClientHttp2Session>((resolve, reject) => {
      const session = connect(url);
      const forget = () => {
        if (sessions.get(url) === opening) sessions.delete(url);
      };
      session.once('connect', () => resolve(session));
      session.once('error', (error) => {
        forget();
        reject(error);
      });
      session.once('close', forget);
      session.once('goaway', forget);
    });
    sessions.set(url, opening);
    // A rejected attempt is answered to its caller; the map no longer holds it.
    opening.catch(() => {});
    return opening;
  }

  /** The next worker in turn that accepts a connection; each one is tried at most once per request. */
  async function pick(): Promise<ClientHttp2Session | undefined> {
    for (let tried = 0; tried < workerUrls.length; tried++) {
      const url = workerUrls[next++ % workerUrls.length] as string;
      try {
        const session = await sessionTo(url);
        if (!session.closed && !session.destroyed) return session;
      } catch {
        // down: the next one
      }
    }
    return undefined;
  }

  const server = createServer();
  server.on('stream', (stream, headers) => {
    stream.pause(); // hold the request body until a worker is chosen
    pick().then(
      (session) => (session ? forward(stream, headers, session) : refuse(stream)),
      () => refuse(stream),
    );
  });
  return listen(server, host, options.port, () => {
    for (const opening of sessions.values()) opening.then((session) => session.destroy()).catch(() => {});
    sessions.clear();
  });
}

/** Pseudo-headers the client session sets itself (its own scheme and authority). */
const OWN_HEADERS = new Set([':authority', ':scheme']);

function forward(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, session: ClientHttp2Session): void {
  if (stream.destroyed) return;
  const outgoing: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!OWN_HEADERS.has(name)) outgoing[name] = value;
  const upstream = session.request(outgoing);
  upstream.on('response', (responseHeaders) => {
    if (stream.destroyed) return;
    const back: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(responseHeaders)) if (!name.startsWith(':')) back[name] = value;
    stream.respond({ ...back, ':status': responseHeaders[':status'] });
    upstream.pipe(stream);
  });
  stream.pipe(upstream);
  stream.resume();
  // Either side gone: cut the other, so Restate sees the invocation's stream fail and retries it.
  upstream.on('error', () => stream.close(constants.NGHTTP2_INTERNAL_ERROR));
  upstream.on('close', () => {
    if (!stream.closed && upstream.rstCode !== constants.NGHTTP2_NO_ERROR)
      stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  });
  stream.on('error', () => upstream.close(constants.NGHTTP2_CANCEL));
  stream.on('close', () => {
    if (!upstream.closed) upstream.close(constants.NGHTTP2_CANCEL);
  });
}

function refuse(stream: ServerHttp2Stream): void {
  if (stream.destroyed) return;
  stream.respond({ ':status': 503 });
  stream.end('no worker is up');
}
