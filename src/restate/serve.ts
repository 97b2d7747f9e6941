import './node20.js';
import { createServer, type Http2Server } from 'node:http2';
import { createEndpointHandler, type LoggerTransport } from '@restatedev/restate-sdk';
import type { AgentObject } from './agent-object.js';
import { listen } from './listen.js';

type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** A worker: an HTTP/2 endpoint that serves agent objects to a Restate server (a "deployment" once registered). */
export interface AgentWorker {
  /** What to register with the server's admin API (`restate deployments register <url>`). */
  readonly url: string;
  readonly port: number;
  /** Stops serving without waiting for open turns: Restate retries them where the object is served again. */
  close(): Promise<void>;
}

/**
 * Serves agent objects over HTTP/2 (Restate's bidirectional protocol: a turn streams its journal entries and their
 * acknowledgements over one connection). Port 0 takes a free one; the host is loopback unless given.
 */
export async function serveAgents(
  objects: readonly AgentObject[],
  options: {
    port?: number;
    host?: string /** The SDK's log lines at this level and above (default `warn`). */;
    log?: LogLevel;
  } = {},
): Promise<AgentWorker> {
  const shown = LEVELS.indexOf(options.log ?? 'warn');
  const host = options.host ?? '127.0.0.1';
  const logger: LoggerTransport = (meta, message, ...rest) => {
    if (LEVELS.indexOf(meta.level as LogLevel) < shown) return;
    // Request signatures (Restate Cloud's) protect an endpoint reachable by others; a loopback worker is not.
    if (host === '127.0.0.1' && String(message).startsWith('Accepting requests without validating')) return;
    console.error(`[restate ${meta.level}]`, message, ...rest);
  };
  const server: Http2Server = createServer(
    createEndpointHandler({
      services: objects.flatMap((object) => [object, object.control, object.tasks, object.slots, object.batches]),
      logger,
    }),
  );
  return listen(server, host, options.port);
}
