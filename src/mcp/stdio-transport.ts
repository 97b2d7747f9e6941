import { spawn } from 'node:child_process';
import type { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { hideOwnSecrets } from '../tools/builtin/environ.js';
import { ProcessGroup } from '../tools/builtin/process-group.js';
import { LineReader, type Oversized } from './lines.js';

/** What this transport takes from the SDK (an optional peer), loaded by the caller with the rest of it. */
export interface StdioCodec {
  getDefaultEnvironment: typeof getDefaultEnvironment;
  deserializeMessage: typeof deserializeMessage;
  serializeMessage: typeof serializeMessage;
}

/** The SDK's own limit (`STDIO_DEFAULT_MAX_BUFFER_SIZE`). */
const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/**
 * An MCP server Troupe starts as a child process and talks to over its stdin and stdout: the command, its arguments,
 * environment and working folder.
 */
export interface StdioServer {
  command: string;
  args?: readonly string[];
  env?: Record<string, string>;
  cwd?: string;
}

/**
 * MCP over a child's stdin / stdout, like the SDK's stdio transport (the same environment: the SDK's safe default
 * set, HOME, LOGNAME, PATH, SHELL, TERM, USER, plus what the config names), but with what it cannot do:
 *
 * - the server runs in its own process group: servers are often launched through `npx` or a shell script, and
 *   killing only the direct child would leave the real server running. `close()` ends the whole group (SIGTERM,
 *   then SIGKILL), and the process-wide exit hook of `ProcessGroup` ends any group still alive at exit;
 * - a message over the size limit (10 MB) is skipped, and the request it answered gets an error, so that one
 *   call fails; the SDK's transport throws from its data handler, which ends the process.
 */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private group: ProcessGroup | undefined;
  private readonly lines: LineReader;
  /** Requests sent and not answered yet: what an oversized reply may have been meant for. */
  private readonly pending = new Set<string | number>();
  private stderrTail = '';
  private closing = false;

  constructor(
    private readonly server: StdioServer,
    private readonly codec: StdioCodec,
    private readonly killGraceMs = 2000,
    private readonly maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES,
  ) {
    this.lines = new LineReader(
      maxMessageBytes,
      (line) => this.receive(line),
      (line) => this.oversized(line),
    );
  }

  /** The last lines the server wrote to stderr: what to show when it fails. */
  get stderr(): string {
    return this.stderrTail.trim();
  }

  get pid(): number | undefined {
    return this.group?.pid;
  }

  async start(): Promise<void> {
    hideOwnSecrets();
    const child = spawn(this.server.command, [...(this.server.args ?? [])], {
      cwd: this.server.cwd,
      env: { ...this.codec.getDefaultEnvironment(), ...this.server.env },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    const group = new ProcessGroup(child);
    this.group = group;
    child.stdout?.on('data', (chunk: Buffer) => this.lines.push(chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2000);
    });
    child.stdin?.on('error', (error) => this.onerror?.(error));
    void group.exited.then(() => {
      if (!this.closing) void this.close();
    });
  }

  private receive(line: string): void {
    let message: JSONRPCMessage;
    try {
      message = this.codec.deserializeMessage(line);
    } catch (error) {
      this.onerror?.(error as Error);
      return;
    }
    if ('id' in message && message.id !== undefined && !('method' in message)) this.pending.delete(message.id);
    this.onmessage?.(message);
  }

  /**
   * A reply too long to read fails its request: the one whose id it carries, else, when its id cannot be seen,
   * every request waiting (one of them it was).
   */
  private oversized(line: Oversized): void {
    const limit = `${Math.round(this.maxMessageBytes / 2 ** 20)} MB`;
    const message = `its reply was ${(line.bytes / 2 ** 20).toFixed(1)} MB, over the ${limit} a message may have`;
    const ids = line.id !== undefined && this.pending.has(line.id) ? [line.id] : [...this.pending];
    if (ids.length === 0) this.onerror?.(new Error(`The server sent a message of ${line.bytes} bytes: skipped`));
    for (const id of ids) {
      this.pending.delete(id);
      this.onmessage?.({ jsonrpc: '2.0', id, error: { code: -32603, message } });
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message && 'method' in message) this.pending.add(message.id);
    return new Promise((resolve, reject) => {
      const stdin = this.group?.child.stdin;
      if (!stdin || stdin.destroyed) {
        reject(new Error('The MCP server is not running'));
        return;
      }
      stdin.write(this.codec.serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const group = this.group;
    if (group) {
      group.child.stdin?.end();
      await group.terminate(this.killGraceMs);
    }
    this.lines.clear();
    this.pending.clear();
    this.onclose?.();
  }
}
