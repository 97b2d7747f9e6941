import { spawn } from 'node:child_process';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { hideOwnSecrets } from '../tools/builtin/environ.js';
import { ProcessGroup } from '../tools/builtin/process-group.js';

export interface StdioServer {
  command: string;
  args?: readonly string[];
  env?: Record<string, string>;
  cwd?: string;
}

/**
 * MCP over a child's stdin / stdout, like the SDK's stdio transport, but the server runs in its own process group:
 * servers are often launched through `npx` or a shell script, and killing only the direct child would leave the
 * real server running. `close()` ends the whole group (SIGTERM, then SIGKILL), and the process-wide exit hook of
 * `ProcessGroup` ends any group still alive when this process exits.
 */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private group: ProcessGroup | undefined;
  private readonly buffer = new ReadBuffer();
  private stderrTail = '';
  private closing = false;

  constructor(
    private readonly server: StdioServer,
    private readonly killGraceMs = 2000,
  ) {}

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
      env: { ...getDefaultEnvironment(), ...this.server.env },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    const group = new ProcessGroup(child);
    this.group = group;
    child.stdout?.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (!message) break;
        this.onmessage?.(message);
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2000);
    });
    child.stdin?.on('error', (error) => this.onerror?.(error));
    void group.exited.then(() => {
      if (!this.closing) void this.close();
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.group?.child.stdin;
      if (!stdin || stdin.destroyed) {
        reject(new Error('The MCP server is not running'));
        return;
      }
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
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
    this.buffer.clear();
    this.onclose?.();
  }
}
