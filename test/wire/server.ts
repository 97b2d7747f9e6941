/**
 * A loopback HTTP server (127.0.0.1 only) that speaks the wire formats of `/v1/chat/completions`,
 * `/v1/responses`, `/v1/messages` and Gemini's `streamGenerateContent` from scripted replies, so that the
 * official SDK clients do real HTTP against it: SSE framing with `event:` names, `data:` payloads, comments and `[DONE]`; JSON error bodies
 * with the providers' headers (also for streaming requests, as the services do); cut streams; streams
 * that hang until the client goes away.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** OpenAI's and Anthropic's paths, and Gemini's `/v1beta/models/{model}:streamGenerateContent`. */
export type WirePath = '/v1/chat/completions' | '/v1/responses' | '/v1/messages' | `/v1beta/models/${string}`;

export interface SseEvent {
  event?: string;
  /** The `data:` payload, sent as it is. */
  data: string;
}

export type WireReply =
  | {
      kind: 'sse';
      events: (SseEvent | { comment: string })[];
      status?: number;
      headers?: Record<string, string>;
      /** Ends the stream with `data: [DONE]` (Chat Completions). */
      done?: boolean;
      /** Destroys the socket after the events instead of ending the response. */
      cut?: boolean;
      /** Keeps the response open after the events until the client closes it. */
      hang?: boolean;
      /** Writes every event in two TCP writes, split mid-payload, to exercise the SDK's SSE framing. */
      split?: boolean;
      /** Pause between events, in ms. */
      paceMs?: number;
    }
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  /** A response body sent as it is (recorded SSE bytes). */
  | { kind: 'raw'; body: string; status?: number; headers?: Record<string, string> }
  /** Decided by the request: a strict provider that accepts or refuses what it is sent. */
  | { kind: 'check'; reply: (request: WireRequest) => Exclude<WireReply, { kind: 'check' }> };

export interface WireRequest {
  method: string;
  path: string;
  /** The query string, without its `?` (Gemini's `alt=sse`). */
  query: string;
  headers: Record<string, string | string[] | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are inspected freely by tests.
  body: any;
  /** When the client closed the connection before the response ended, ms after the request arrived. */
  clientClosedAfterMs?: number;
}

export class WireServer {
  readonly requests: WireRequest[] = [];
  private readonly queues = new Map<string, WireReply[]>();
  private readonly closeWaiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WireServer> {
    let self: WireServer | undefined;
    const server = createServer((req, res) => {
      void self?.handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self = new WireServer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** The base URL an SDK client takes (`…/v1`). */
  get baseURL(): string {
    return `${this.url}/v1`;
  }

  /** Queues replies for a path, answered in order. */
  reply(path: WirePath, ...replies: WireReply[]): this {
    const queue = this.queues.get(path) ?? [];
    queue.push(...replies);
    this.queues.set(path, queue);
    return this;
  }

  /** Replies not yet used, per path. */
  pending(): number {
    let n = 0;
    for (const queue of this.queues.values()) n += queue.length;
    return n;
  }

  /** Resolves when some client closes a connection before its response ended. */
  clientClosed(): Promise<void> {
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  reset(): void {
    this.requests.length = 0;
    this.queues.clear();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const [path = '/', query = ''] = (req.url ?? '/').split('?');
    const record: WireRequest = {
      method: req.method ?? 'GET',
      path,
      query,
      headers: req.headers,
      body: text ? JSON.parse(text) : undefined,
    };
    this.requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) {
        record.clientClosedAfterMs = Date.now() - started;
        for (const wake of this.closeWaiters.splice(0)) wake();
      }
    });

    const queued = this.queues.get(path)?.shift();
    const reply = queued?.kind === 'check' ? queued.reply(record) : queued;
    if (!reply) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'test_error', message: `no scripted reply for ${path}` } }));
      return;
    }
    if (reply.kind === 'json') {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(JSON.stringify(reply.body));
      return;
    }
    if (reply.kind === 'raw') {
      res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', ...reply.headers });
      res.end(reply.body);
      return;
    }
    res.writeHead(reply.status ?? 200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...reply.headers,
    });
    res.flushHeaders();
    for (const event of reply.events) {
      if (res.destroyed) return;
      const frame = 'comment' in event ? `: ${event.comment}\n\n` : frameOf(event);
      if (reply.split && frame.length > 4) {
        const cut = Math.floor(frame.length / 2);
        res.write(frame.slice(0, cut));
        await tick();
        res.write(frame.slice(cut));
      } else res.write(frame);
      if (reply.paceMs) await sleep(reply.paceMs);
      else await tick();
    }
    if (reply.done) res.write('data: [DONE]\n\n');
    if (reply.cut) {
      await tick();
      res.socket?.destroy();
      return;
    }
    if (reply.hang) return;
    res.end();
  }
}

export function frameOf(event: SseEvent): string {
  const lines = event.event ? [`event: ${event.event}`] : [];
  for (const line of event.data.split('\n')) lines.push(`data: ${line}`);
  return `${lines.join('\n')}\n\n`;
}

function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
