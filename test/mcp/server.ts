/** A small MCP server for the tests, built with the SDK's own server classes. */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface TestServerOptions {
  /** Where `hang` writes "started" when called and "cancelled" when the client cancels it. */
  log?: string;
  /** A child process the server keeps (to check that none survives the client). */
  helperPid?: number;
}

export function buildServer(options: TestServerOptions = {}): McpServer {
  const server = new McpServer({ name: 'test-server', version: '1.0.0' });
  server.registerTool(
    'echo',
    {
      title: 'Echo text',
      description: 'Echoes its text',
      inputSchema: { text: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }),
  );
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: { a: z.number(), b: z.number().int() },
      annotations: { readOnlyHint: true },
    },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }),
  );
  server.registerTool(
    'slow',
    { description: 'Reports progress, then answers', inputSchema: { steps: z.number(), ms: z.number() } },
    async ({ steps, ms }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await new Promise((r) => setTimeout(r, ms));
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: steps },
          });
        }
      }
      return { content: [{ type: 'text', text: `finished ${steps} steps` }] };
    },
  );
  server.registerTool('hang', { description: 'Never answers', inputSchema: {} }, (_args, extra) => {
    if (options.log) appendFileSync(options.log, 'started\n');
    return new Promise(() => {
      extra.signal.addEventListener('abort', () => {
        if (options.log) appendFileSync(options.log, 'cancelled\n');
      });
    });
  });
  server.registerTool('fail', { description: 'Always fails', inputSchema: {} }, async () => ({
    content: [{ type: 'text', text: 'it broke' }],
    isError: true,
  }));
  server.registerTool('pids', { description: 'Its process ids', inputSchema: {} }, async () => ({
    content: [{ type: 'text', text: JSON.stringify({ server: process.pid, helper: options.helperPid }) }],
  }));
  return server;
}

/** The server over streamable HTTP on 127.0.0.1 (stateless: a server and transport per request). */
export async function startHttpServer(
  options: TestServerOptions = {},
): Promise<{ url: string; close(): Promise<void>; server: Server }> {
  const http = createServer(async (req, res) => {
    if (req.headers.authorization !== 'Bearer test-token') {
      res.writeHead(401).end('unauthorized');
      return;
    }
    const mcp = buildServer(options);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    server: http,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/** Starts a helper child that ignores SIGTERM, the kind a real server leaves behind. */
export function startHelper(): number {
  const child = spawn('/bin/sh', ['-c', "trap '' TERM; sleep 999"], { stdio: 'ignore' });
  return child.pid ?? 0;
}
