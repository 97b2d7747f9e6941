import type { AddressInfo } from 'node:net';
import { connect, createServer, type Socket } from 'node:net';

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
 * that address: a TCP proxy that hands each connection Restate opens to the next worker in turn. Restate opens
 * many HTTP/2 connections to a deployment under load (about one per four invocations in flight) and spreads
 * invocations over them, so connections balance the load; the proxy copies bytes and never parses a frame, which
 * keeps its own cost far below a worker's. A worker that refuses the connection is skipped; a connection cut by a
 * worker that dies mid-invocation is cut on Restate's side too, and Restate retries those invocations on new
 * connections, which go to live workers.
 *
 * For loopback and one host; across machines use any TCP or HTTP/2-aware load balancer the same way.
 */
export async function balanceAgents(
  workerUrls: readonly string[],
  options: { port?: number; host?: string } = {},
): Promise<AgentBalancer> {
  if (workerUrls.length === 0) throw new Error('balanceAgents needs at least one worker URL');
  const targets = workerUrls.map((url) => {
    const { hostname, port } = new URL(url);
    return { host: hostname, port: Number(port) };
  });
  const host = options.host ?? '127.0.0.1';
  const open = new Set<Socket>();
  let next = 0;

  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };

  /** Connects `inbound` to the next worker that accepts, each tried at most once; none: the connection is cut. */
  function forward(inbound: Socket, tried = 0): void {
    if (inbound.destroyed) return;
    if (tried === targets.length) {
      inbound.destroy();
      return;
    }
    const target = targets[next++ % targets.length] as (typeof targets)[number];
    const upstream = connect(target.port, target.host);
    upstream.setNoDelay(true);
    track(upstream);
    const refused = () => forward(inbound, tried + 1); // down: the next one
    upstream.once('error', refused);
    upstream.once('connect', () => {
      upstream.off('error', refused);
      // Either side gone: cut the other, so Restate sees the connection fail and retries its invocations.
      upstream.on('error', () => inbound.destroy());
      upstream.once('close', () => inbound.destroy());
      inbound.once('close', () => upstream.destroy());
      inbound.pipe(upstream);
      upstream.pipe(inbound);
      inbound.resume();
    });
  }

  const server = createServer({ pauseOnConnect: true, noDelay: true }, (inbound) => {
    track(inbound);
    inbound.on('error', () => inbound.destroy()); // its close cuts the worker's side
    forward(inbound);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
