import type { Http2Server, ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';

/** An HTTP/2 server listening: its address, and a close that does not wait for open streams. */
export interface Listening {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Starts `server` on `host` (port 0 takes a free one) and keeps its inbound sessions, so that `close` can drop them:
 * an open stream is a turn Restate will retry elsewhere, so closing never waits for one.
 */
export async function listen(server: Http2Server, host: string, port: number | undefined): Promise<Listening> {
  const inbound = new Set<ServerHttp2Session>();
  server.on('session', (session) => {
    inbound.add(session);
    session.once('close', () => inbound.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port ?? 0, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of inbound) session.destroy();
        server.close(() => resolve());
      }),
  };
}
